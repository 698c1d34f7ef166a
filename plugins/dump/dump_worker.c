/*
 * Worker threads. Each owns one snapshot connection and one writer, takes chunk jobs from the
 * queue and streams each chunk with mysql_use_result: rows are formatted as they arrive and never
 * buffered, so memory does not grow with the table. The stop token and the run's abort flag are
 * checked after every row (two atomic loads); on a stop the connection is dropped with a reset
 * (dump_conn_abort) rather than reading the rest of the chunk.
 */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dump_internal.h"

typedef struct dump_worker_arg {
  dump_unit *u;
  int index;
} dump_worker_arg;

/* 0 done, 1 stopped, -1 error (in *err). */
static int dump_worker_chunk(dump_unit *u, dump_conn *c, dump_writer *w, dump_chunk *ch,
                             dm_error *err) {
  dump_table *t = ch->table;
  if (t->n_cols == 0)
    return 0;
  /* DM's `where` ANDed with the chunk's range (" WHERE k >= ..."): its text was checked to be a
   * condition that cannot close the parentheses around it (dm_db_condition_check, db.h) */
  char *sql = !u->where ? dump_strfmt("SELECT %s FROM %s%s", t->select_list, t->qname, ch->where)
              : ch->where[0]
                  ? dump_strfmt("SELECT %s FROM %s WHERE (%s) AND%s", t->select_list, t->qname,
                                u->where, ch->where + strlen(" WHERE"))
                  : dump_strfmt("SELECT %s FROM %s WHERE (%s)", t->select_list, t->qname, u->where);
  if (!sql) {
    u->host->error_make(u->ctx, err, DM_ERR_NO_MEMORY, NULL, "dump: no memory for a query");
    return -1;
  }
  int rc = 0;
  MYSQL_RES *res = NULL;
  if (mysql_real_query(c->m, sql, strlen(sql)) != 0 || !(res = mysql_use_result(c->m))) {
    if (dump_should_stop(u))
      rc = 1;
    else {
      dump_conn_error(u, c, sql, err);
      rc = -1;
    }
    free(sql);
    return rc;
  }
  if ((int)mysql_num_fields(res) != t->n_cols) {
    u->host->error_make(u->ctx, err, DM_ERR_INTERNAL, NULL,
                        "dump: %s returned %u columns, expected %d", sql, mysql_num_fields(res),
                        t->n_cols);
    rc = -1;
  }
  uint8_t forms[t->n_cols > 0 ? t->n_cols : 1];
  MYSQL_FIELD *fields = mysql_fetch_fields(res);
  for (int i = 0; rc == 0 && i < t->n_cols; i++)
    forms[i] =
        t->forms[i] != DUMP_FORM_AUTO ? t->forms[i] : (uint8_t)dump_form_of_field(&fields[i]);
  dump_writer_begin(w, t);
  MYSQL_ROW row;
  while (rc == 0) {
    if (dump_should_stop(u)) {
      rc = 1;
      break;
    }
    if (!(row = mysql_fetch_row(res)))
      break;
    if (dump_writer_row(w, row, mysql_fetch_lengths(res), forms, err) != 0)
      rc = -1;
  }
  if (rc == 0 && mysql_errno(c->m) != 0) {
    if (dump_should_stop(u))
      rc = 1;
    else {
      dump_conn_error(u, c, sql, err);
      rc = -1;
    }
  }
  if (rc != 0) {
    /* Rows may still be on their way: the connection is given up (the whole dump is redone). */
    dump_writer_abort(w);
    dump_conn_abort(u, c, res);
  } else {
    mysql_free_result(res);
  }
  free(sql);
  if (rc == 0 && dump_writer_end(w, err) != 0) {
    dump_writer_abort(w);
    rc = -1;
  }
  return rc;
}

/*
 * A worker runs as SCHED_BATCH (sched(7); any thread may choose it). The source's server thread
 * sends a chunk in packets of net_buffer_length; a worker that is faster than the server waits on
 * its socket, and as SCHED_OTHER each packet's wake-up preempts the sender: on 2 cores with 4
 * workers, perf showed the server's send path spending 9% of its time switching tasks, and the
 * server used 0.70 CPU s for the 8 x 200k rows that cost it 0.55 s for mydumper, whose busier
 * workers wait less. A batch thread does not preempt on wake-up, so the server fills the socket
 * in longer runs: 0.60 CPU s, the dump 10% faster (bench/README.md). The thread that runs worker
 * 0 is the unit's process thread: it gets its policy back.
 */
static int dump_worker_batch(void) {
  int was = sched_getscheduler(0);
  struct sched_param p = {0};
  if (was == SCHED_OTHER)
    (void)sched_setscheduler(0, SCHED_BATCH, &p);
  return was;
}

static void dump_worker_unbatch(int was) {
  struct sched_param p = {0};
  if (was == SCHED_OTHER)
    (void)sched_setscheduler(0, SCHED_OTHER, &p);
}

void dump_worker_run(dump_unit *u, int index) {
  int policy = dump_worker_batch();
  dump_conn *c = &u->workers[index];
  dump_writer w;
  dump_writer_init(&w, u, index);
  dump_chunk *ch;
  while ((ch = dump_queue_pop(u)) != NULL) {
    dm_error err;
    int rc = dump_worker_chunk(u, c, &w, ch, &err);
    if (rc == 0)
      dump_table_chunk_done(u, ch->table);
    dump_chunk_free(ch);
    if (rc < 0)
      dump_fail(u, &err);
    if (rc != 0)
      break;
  }
  dump_writer_free(&w);
  /* Ends the snapshot; nothing was written through it. */
  dump_conn_close(u, c);
  dump_worker_unbatch(policy);
}

static void *dump_worker_main(void *p) {
  dump_worker_arg a = *(dump_worker_arg *)p;
  free(p);
  dump_worker_run(a.u, a.index);
  return NULL;
}

int dump_workers_start(dump_unit *u, pthread_t *tids, int from, int to, dm_error *err) {
  for (int i = from; i < to; i++) {
    dump_worker_arg *a = malloc(sizeof *a);
    if (a) {
      a->u = u;
      a->index = i;
      if (pthread_create(&tids[i], NULL, dump_worker_main, a) == 0)
        continue;
    }
    free(a);
    u->host->error_make(u->ctx, err, DM_ERR_NO_MEMORY, NULL,
                        "dump: cannot start worker thread %d of %d", i + 1, u->threads);
    return i; /* threads [from, i) run and must be joined */
  }
  return to;
}
