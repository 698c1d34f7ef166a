#!/usr/bin/env python3
"""The status page in headless Chromium (selenium), driven by status_page.sh: the daemon at URL
runs page_fake (fake units, a slow dump) and page_sync (a real sync with ~30 s of lag) on source
mysql-p1 (enable-relay), and has sampled page_sync's lag for some seconds before the page opens.

  status_page.py <url> <dmctl> <state dir> <out dir>

Checks: the page loads from the daemon alone; page_fake's progress bar moves; the lag chart has
data points for page_sync with a lag above 0 and its line's pixels on the canvas, the first of
them older than the page (the daemon's history, GET /api/v1/dmhost/tasks/NAME/lag); Pause shows Paused
(query-status agrees), Resume shows Running (query-status agrees); Stop relay shows the relay
Stopped, Start relay Running (operate-source show agrees each time), a second start's refusal in
the fault line. Screenshots in out dir.
"""
import json
import os
import subprocess
import sys
import time

from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

url, dmctl, state, out = sys.argv[1:5]


def wait(driver, what, cond, secs=30):
    try:
        return WebDriverWait(driver, secs, poll_frequency=0.2).until(lambda d: cond(d))
    except Exception:
        driver.save_screenshot(os.path.join(out, "failed.png"))
        sys.exit(f"FAILED: {what} (within {secs} s); page text:\n{driver.find_element(By.TAG_NAME, 'body').text}")


def dmctl_stage(task):
    a = json.loads(subprocess.run([dmctl, "--state-dir", state, "query-status", task],
                                  capture_output=True, text=True, check=True).stdout)
    return a["sources"][0]["subTaskStatus"][0]["stage"]


def dmctl_relay_stage(source):
    a = json.loads(subprocess.run([dmctl, "--state-dir", state, "operate-source", "show", "-s", source],
                                  capture_output=True, text=True, check=True).stdout)
    return ((a["sources"][0].get("relayStatus") or {}).get("stage"))


def click(driver, task, role, where="task"):
    """Click the task's (or the source's) button; the page redraws its tables at each poll, so a
    button found just before a redraw is stale: find it again."""
    for _ in range(20):
        try:
            driver.find_element(By.CSS_SELECTOR, f'[data-{where}="{task}"] [data-role="{role}"]').click()
            return
        except StaleElementReferenceException:
            time.sleep(0.05)
    sys.exit(f"FAILED: could not click {task}'s {role} button")


def relay_in_page(d, source):
    try:
        return d.find_element(By.CSS_SELECTOR, f'#sources [data-source="{source}"] [data-role="relay-stage"]').text
    except Exception:
        return None


def stage_in_page(d, task):
    try:
        box = d.find_element(By.CSS_SELECTOR, f'[data-task="{task}"]')
        return (box.find_element(By.CSS_SELECTOR, '[data-role="task-stage"]').text,
                box.find_element(By.CSS_SELECTOR, '[data-role="stage"]').text)
    except Exception:
        return None


opts = webdriver.ChromeOptions()
opts.binary_location = "/usr/bin/chromium"
for a in ("--headless=new", "--window-size=1100,1250", "--no-proxy-server", "--disable-gpu",
          "--disable-dev-shm-usage", "--hide-scrollbars"):
    opts.add_argument(a)
if os.geteuid() == 0:
    opts.add_argument("--no-sandbox")  # chromium's sandbox refuses to run as root
driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=opts)
try:
    t = time.monotonic()
    driver.get(url)
    wait(driver, "the page's first poll", lambda d: d.execute_script("return document.body.dataset.polls"))
    first_poll = time.monotonic() - t
    nav = driver.execute_script(
        "const n = performance.getEntriesByType('navigation')[0];"
        "return [n.responseEnd - n.requestStart, n.loadEventEnd - n.startTime];")
    res = driver.execute_script("return performance.getEntriesByType('resource').map(r => r.name)")
    foreign = [r for r in res if not r.startswith(url)]
    if foreign:
        sys.exit(f"FAILED: the page loaded assets from elsewhere: {foreign}")
    print(f"page: html {nav[0]:.1f} ms, load event {nav[1]:.1f} ms, first poll rendered "
          f"{first_poll * 1000:.0f} ms after get; {len(res)} requests, all to the daemon")

    # page_fake's progress bar moves.
    def done(d):
        try:
            bar = d.find_element(By.CSS_SELECTOR, '[data-task="page_fake"] .bar')
            return int(bar.get_attribute("data-done")), float(bar.get_attribute("data-percent"))
        except Exception:
            return None
    d0 = wait(driver, "page_fake's progress bar", done)
    d1 = wait(driver, "page_fake's progress bar to move",
              lambda d: (lambda v: v if v and v[0] > d0[0] else None)(done(d)))
    fill = driver.execute_script(
        "const b = document.querySelector('[data-task=\"page_fake\"] .bar');"
        "return [b.firstElementChild.getBoundingClientRect().width, b.getBoundingClientRect().width];")
    if not fill[0] > 0 or abs(fill[0] / fill[1] * 100 - d1[1]) > 5:
        sys.exit(f"FAILED: the bar's fill is {fill[0]:.1f} of {fill[1]:.1f} px at {d1[1]}%")
    print(f"progress bar: {d0[0]} -> {d1[0]} items ({d1[1]:.3f}%), fill {fill[0]:.1f}/{fill[1]:.0f} px")
    text = driver.find_element(By.CSS_SELECTOR, '[data-task="page_fake"] .progress-text').text
    if "ETA" not in text or "items/s" not in text:
        sys.exit(f"FAILED: the progress text has no rate or ETA: {text}")

    # The lag chart: samples of page_sync's series, above 0, and its line drawn on the canvas.
    def lag(d):
        pts = d.execute_script(
            "const h = window.dmhLag.get('page_sync/mysql-p1'); return h ? h.map(p => p[1]) : null;")
        return pts if pts and len(pts) >= 3 and max(pts) > 0 else None
    def drawn(d):
        pts = lag(d)
        if not pts:
            return None
        px = d.execute_script("""
            const c = document.getElementById('lag'), g = c.getContext('2d');
            const px = g.getImageData(0, 0, c.width, c.height).data;
            let n = 0;  // pixels of the first series' colour (#3b82f6), anti-aliasing allowed
            for (let i = 0; i < px.length; i += 4)
              if (px[i + 3] > 200 && Math.abs(px[i] - 59) < 40 && Math.abs(px[i + 1] - 130) < 40 && px[i + 2] > 200) n++;
            return [n, Number(c.dataset.points)];""")
        return (pts, px) if px[0] >= 20 and px[1] >= 3 else None
    # 3 samples, one above 0, and the line's pixels (20 or more) on the canvas.
    pts, pixels = wait(driver, "the lag chart to draw page_sync/mysql-p1 with a lag above 0", drawn, 45)
    print(f"lag chart: samples {pts}, {pixels[1]} points, {pixels[0]} line pixels")
    # The history is the daemon's: the first sample is older than the page (opened after the
    # task had lagged for some seconds), not one of the page's own polls.
    first, origin = driver.execute_script(
        "return [window.dmhLag.get('page_sync/mysql-p1')[0][0], performance.timeOrigin];")
    if not first < origin - 2000:
        sys.exit(f"FAILED: the chart's first sample ({first}) is not older than the page ({origin:.0f}): "
                 "the history is not the daemon's")
    print(f"lag history: the first sample {(origin - first) / 1000:.1f} s older than the page")
    driver.save_screenshot(os.path.join(out, "running.png"))

    # Pause, then resume, page_fake with the page's buttons.
    click(driver, "page_fake", "pause")
    wait(driver, "Paused in the page", lambda d: stage_in_page(d, "page_fake") == ("Paused", "Paused"))
    if dmctl_stage("page_fake") != "Paused":
        sys.exit(f"FAILED: the page shows Paused, query-status says {dmctl_stage('page_fake')}")
    p0 = wait(driver, "page_fake's progress bar while Paused", done)[0]
    time.sleep(2)
    p1 = wait(driver, "page_fake's progress bar while Paused", done)[0]
    if p1 != p0:
        sys.exit(f"FAILED: the progress moved while Paused: {p0} -> {p1}")
    driver.save_screenshot(os.path.join(out, "paused.png"))
    # A refusal is shown: pausing a paused task is refused by the daemon.
    click(driver, "page_fake", "pause")
    refusal = wait(driver, "the refusal of a second pause shown",
                   lambda d: d.find_element(By.ID, "fault").text or None, 10)
    print(f"second pause refused in the page: {refusal}")
    click(driver, "page_fake", "resume")
    wait(driver, "Running in the page", lambda d: stage_in_page(d, "page_fake") == ("Running", "Running"))
    if dmctl_stage("page_fake") != "Running":
        sys.exit(f"FAILED: the page shows Running, query-status says {dmctl_stage('page_fake')}")
    wait(driver, "the progress to move again after resume",
         lambda d: (lambda v: v if v and v[0] > p0 else None)(done(d)))
    time.sleep(1.6)
    driver.save_screenshot(os.path.join(out, "resumed.png"))
    print("pause/resume: Paused then Running in the page and in query-status")

    # The relay of mysql-p1 (enable-relay): Stop relay, then Start relay, with the page's buttons.
    wait(driver, "the relay Running in the page", lambda d: relay_in_page(d, "mysql-p1") == "Running")
    click(driver, "mysql-p1", "stop-relay", "source")
    wait(driver, "the relay Stopped in the page", lambda d: relay_in_page(d, "mysql-p1") == "Stopped")
    if dmctl_relay_stage("mysql-p1") != "Stopped":
        sys.exit(f"FAILED: the page shows the relay Stopped, operate-source show says {dmctl_relay_stage('mysql-p1')}")
    driver.save_screenshot(os.path.join(out, "relay-stopped.png"))
    click(driver, "mysql-p1", "start-relay", "source")
    wait(driver, "the relay Running again in the page", lambda d: relay_in_page(d, "mysql-p1") == "Running")
    if dmctl_relay_stage("mysql-p1") != "Running":
        sys.exit(f"FAILED: the page shows the relay Running, operate-source show says {dmctl_relay_stage('mysql-p1')}")
    # A second start is refused by the daemon: the refusal is shown.
    click(driver, "mysql-p1", "start-relay", "source")
    refusal = wait(driver, "the refusal of a second start-relay shown",
                   lambda d: (lambda t: t if "start-relay mysql-p1" in t else None)(d.find_element(By.ID, "fault").text), 10)
    print(f"relay: Stopped then Running in the page and in operate-source show; second start refused: {refusal}")
finally:
    driver.quit()
