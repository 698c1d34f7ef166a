#!/usr/bin/env python3
"""A rogue MySQL-protocol server for tests (issue 20): plays an upstream that is not what dmhost
expects, on 127.0.0.1, and prints "port N" on stdout once it listens (tests/db/rogue.h starts it).

Modes:
  auth-switch PLUGIN   speaks the v10 handshake itself, takes the client's handshake response, then
                       asks to switch to PLUGIN (mysql_clear_password, dialog, sha256_password,
                       caching_sha2_password). Every byte a client sends is appended to --record,
                       so a test can check whether the password ever left the client. For the
                       clear-text plugins the client's answer is the password itself; for the
                       RSA ones the server sends the public key of --rsa-key (made by the test
                       with openssl), and a client that encrypts its password with a key the
                       server chose has given it away: the server decrypts it and appends the
                       plain bytes to --record too. Then an access-denied error.
  proxy UPSTREAM_PORT  forwards each connection to the real server on UPSTREAM_PORT packet by
                       packet, and answers every `SHOW CREATE TABLE` with the bytes of --answer
                       in place of the statement (the table name column is kept), like a hijacked
                       or hostile source would (without --answer they pass unchanged). --record
                       gets one line per answer ("rewrote ..." or "passed ...").

Only what the tests need: no TLS (the handshake offers none), no compression.
"""
import argparse
import os
import socket
import struct
import subprocess
import sys
import threading

CLIENT_LONG_PASSWORD = 1
CLIENT_FOUND_ROWS = 2
CLIENT_LONG_FLAG = 4
CLIENT_CONNECT_WITH_DB = 8
CLIENT_PROTOCOL_41 = 0x200
CLIENT_TRANSACTIONS = 0x2000
CLIENT_SECURE_CONNECTION = 0x8000
CLIENT_MULTI_STATEMENTS = 0x10000
CLIENT_MULTI_RESULTS = 0x20000
CLIENT_PLUGIN_AUTH = 0x80000
CLIENT_PLUGIN_AUTH_LENENC = 0x200000
CLIENT_DEPRECATE_EOF = 0x1000000

record_lock = threading.Lock()


def record(path, data):
    if not path:
        return
    with record_lock, open(path, "ab") as f:
        f.write(data)


def recv_exact(sock, n):
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return buf


def read_packet(sock):
    """(seq, payload) of one packet (joined when split at 16 MiB), or None at EOF."""
    payload = b""
    while True:
        head = recv_exact(sock, 4)
        if head is None:
            return None
        n = head[0] | head[1] << 8 | head[2] << 16
        body = recv_exact(sock, n) if n else b""
        if body is None:
            return None
        payload += body
        if n < 0xFFFFFF:
            return head[3], payload


def packet_bytes(seq, payload):
    out = b""
    while True:
        part, payload = payload[:0xFFFFFF], payload[0xFFFFFF:]
        out += struct.pack("<I", len(part))[:3] + bytes([seq & 0xFF]) + part
        seq += 1
        if len(part) < 0xFFFFFF:
            return out, seq


def send_packet(sock, seq, payload):
    data, seq = packet_bytes(seq, payload)
    sock.sendall(data)
    return seq


def lenenc_int(n):
    if n < 251:
        return bytes([n])
    if n < 1 << 16:
        return b"\xfc" + struct.pack("<H", n)
    if n < 1 << 24:
        return b"\xfd" + struct.pack("<I", n)[:3]
    return b"\xfe" + struct.pack("<Q", n)


def read_lenenc(buf, at):
    """(value, next offset); value None for NULL (0xfb)."""
    b = buf[at]
    if b < 251:
        return b, at + 1
    if b == 0xFB:
        return None, at + 1
    if b == 0xFC:
        return struct.unpack_from("<H", buf, at + 1)[0], at + 3
    if b == 0xFD:
        return int.from_bytes(buf[at + 1:at + 4], "little"), at + 4
    return struct.unpack_from("<Q", buf, at + 1)[0], at + 9


# ---- auth-switch ----

def handshake_v10(scramble):
    caps = (CLIENT_LONG_PASSWORD | CLIENT_FOUND_ROWS | CLIENT_LONG_FLAG | CLIENT_CONNECT_WITH_DB |
            CLIENT_PROTOCOL_41 | CLIENT_TRANSACTIONS | CLIENT_SECURE_CONNECTION |
            CLIENT_MULTI_STATEMENTS | CLIENT_MULTI_RESULTS | CLIENT_PLUGIN_AUTH |
            CLIENT_PLUGIN_AUTH_LENENC)
    return (b"\x0a" + b"5.5.5-10.11.99-MariaDB-rogue\x00" + struct.pack("<I", 7) + scramble[:8] +
            b"\x00" + struct.pack("<H", caps & 0xFFFF) + b"\x21" + struct.pack("<H", 2) +
            struct.pack("<H", caps >> 16) + bytes([len(scramble) + 1]) + b"\x00" * 10 +
            scramble[8:] + b"\x00" + b"mysql_native_password\x00")


def error_packet(code, state, msg):
    return b"\xff" + struct.pack("<H", code) + b"#" + state + msg


def rsa_decrypt(key, data):
    """The client's RSA-OAEP answer decrypted with the server's own key (openssl)."""
    p = subprocess.run(["openssl", "pkeyutl", "-decrypt", "-inkey", key, "-pkeyopt",
                        "rsa_padding_mode:oaep"], input=data, capture_output=True)
    return p.stdout if p.returncode == 0 else b""


def xor_scramble(data, scramble):
    return bytes(b ^ scramble[i % len(scramble)] for i, b in enumerate(data))


def serve_auth_switch(conn, args):
    scramble = os.urandom(20).replace(b"\x00", b"\x01")
    conn.settimeout(10)
    try:
        send_packet(conn, 0, handshake_v10(scramble))
        got = read_packet(conn)
        if got is None:
            return
        record(args.record, b"[handshake-response]" + got[1] + b"\n")
        plugin = args.plugin.encode()
        # dialog's data is its first question: 4, a password question (the client answers it with
        # the connection's password); the others take a scramble
        data = b"\x04Password: " if args.plugin == "dialog" else scramble + b"\x00"
        record(args.record, b"[switched-to " + plugin + b"]\n")
        seq = send_packet(conn, got[0] + 1, b"\xfe" + plugin + b"\x00" + data)
        got = read_packet(conn)
        while got is not None:
            seq, data = got[0] + 1, got[1]
            record(args.record, b"[auth-data]" + data + b"\n")
            if args.plugin in ("caching_sha2_password",) and data and len(data) == 32:
                # the scramble: ask for the full authentication, which needs the password
                seq = send_packet(conn, seq, b"\x01\x04")
            elif data in (b"\x01", b"\x02") and args.rsa_key:
                # the client asks for the server's public key: give it ours
                pub = subprocess.run(["openssl", "pkey", "-in", args.rsa_key, "-pubout"],
                                     capture_output=True).stdout
                seq = send_packet(conn, seq, b"\x01" + pub)
            elif args.rsa_key and len(data) >= 128:
                plain = xor_scramble(rsa_decrypt(args.rsa_key, data), scramble)
                record(args.record, b"[decrypted]" + plain + b"\n")
                break
            else:
                break
            got = read_packet(conn)
        send_packet(conn, seq, error_packet(1045, b"28000", b"Access denied (rogue server)"))
    except (OSError, socket.timeout):
        pass
    finally:
        conn.close()
        # the last line of each connection: a test waits for it before it reads the record
        record(args.record, b"[closed]\n")


# ---- proxy ----

def is_show_create_table(payload):
    return (payload[:1] == b"\x03" and
            payload[1:].lstrip().upper().startswith(b"SHOW CREATE TABLE"))


def rewrite_row(payload, answer):
    """A text-protocol row of SHOW CREATE TABLE with its second column replaced."""
    n, at = read_lenenc(payload, 0)
    name = payload[:at + (n or 0)]
    return name + lenenc_int(len(answer)) + answer


def serve_proxy(conn, args):
    up = socket.create_connection(("127.0.0.1", args.upstream))
    state = {"pending": False}
    lock = threading.Lock()

    def client_to_server():
        try:
            while True:
                got = read_packet(conn)
                if got is None:
                    break
                seq, payload = got
                if seq == 0:
                    with lock:
                        state["pending"] = is_show_create_table(payload)
                        state["stage"] = "columns"
                up.sendall(packet_bytes(seq, payload)[0])
        except OSError:
            pass
        finally:
            try:
                up.shutdown(socket.SHUT_WR)
            except OSError:
                pass

    t = threading.Thread(target=client_to_server, daemon=True)
    t.start()
    answer = open(args.answer, "rb").read() if args.answer else None
    # A result set: column count, column definitions, EOF (unless CLIENT_DEPRECATE_EOF), rows,
    # EOF or OK. Only the first row of a pending answer changes.
    try:
        while True:
            got = read_packet(up)
            if got is None:
                break
            seq, payload = got
            with lock:
                pending = state["pending"]
                stage = state.get("stage")
            if pending:
                if stage == "columns":
                    if payload[:1] in (b"\x00", b"\xff"):
                        with lock:
                            state["pending"] = False
                    else:
                        ncols, _ = read_lenenc(payload, 0)
                        with lock:
                            state["stage"] = "defs"
                            state["left"] = ncols
                elif stage == "defs":
                    with lock:
                        state["left"] -= 1
                        if state["left"] == 0:
                            state["stage"] = "rows"
                elif stage == "rows":
                    if payload[:1] == b"\xfe" and len(payload) < 9:
                        pass  # the EOF after the column definitions (no CLIENT_DEPRECATE_EOF)
                    elif payload[:1] in (b"\xfe", b"\xff"):
                        with lock:
                            state["pending"] = False
                    elif answer is None:  # no --answer: pass it on, count it
                        record(args.record, b"passed SHOW CREATE TABLE\n")
                        with lock:
                            state["pending"] = False
                    else:
                        payload = rewrite_row(payload, answer)
                        record(args.record, b"rewrote SHOW CREATE TABLE\n")
                        with lock:
                            state["pending"] = False
            conn.sendall(packet_bytes(seq, payload)[0])
    except OSError:
        pass
    finally:
        conn.close()
        up.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["auth-switch", "proxy"])
    ap.add_argument("target", help="the plugin (auth-switch) or the upstream port (proxy)")
    ap.add_argument("--record", help="file the server appends what it received or did to")
    ap.add_argument("--rsa-key", help="PEM private key for the RSA plugins")
    ap.add_argument("--answer", help="file whose bytes answer SHOW CREATE TABLE (proxy)")
    args = ap.parse_args()
    if args.mode == "auth-switch":
        args.plugin = args.target
    else:
        args.upstream = int(args.target)
    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("127.0.0.1", 0))
    ls.listen(64)
    print("port %d" % ls.getsockname()[1], flush=True)
    serve = serve_auth_switch if args.mode == "auth-switch" else serve_proxy
    while True:
        conn, _ = ls.accept()
        threading.Thread(target=serve, args=(conn, args), daemon=True).start()


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        sys.exit(0)
