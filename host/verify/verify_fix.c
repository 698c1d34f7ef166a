/* --fix-sql FILE: the statements that make the target equal to the source, REPLACE of a source row
 * and DELETE of a target row, values as literals (binary ones in hex). The file is the user's
 * path: refused when anything is there (a file or a link), written as "<FILE>.tmp" by the SDK's
 * one sequence (dm_fs_tmp_open, created afresh, 0600) and linked into place, never over a file
 * (DM_FS_NO_REPLACE), so a reader never sees half of it. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "verify_internal.h"

struct vf_fix {
  int fd;
  char path[4096], tmp[4096 + 8];
  int err; /* the first write error's errno */
  long long statements;
};

static void vf_fix_write(vf_fix *f, const char *s, size_t n) {
  while (n > 0 && !f->err) {
    ssize_t w = write(f->fd, s, n);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0) {
      f->err = w < 0 ? errno : EIO;
      return;
    }
    s += w;
    n -= (size_t)w;
  }
}

static int vf_fix_refuse(dm_error *err, const char *path, int e, const char *step) {
  dm_error_set(err, DM_ERR_VERIFY_FIX_FILE, strerror(e), "verify: --fix-sql %s: %s%s%s", path, step,
               step[0] ? ": " : "", strerror(e));
  return -1;
}

/* A name for the file's comment: a control byte (a newline would end the comment) becomes '?'. */
static const char *vf_fix_comment(const char *name, char *out, size_t size) {
  dm_strlcpy(out, name ? name : "", size);
  for (char *p = out; *p; p++)
    if ((unsigned char)*p < 0x20 || *p == 0x7f)
      *p = '?';
  return out;
}

int dmh_verify_fix_check(const char *path, dm_error *err) {
  struct stat st;
  char tmp[4096 + 8];
  if (strlen(path) >= sizeof((vf_fix *)0)->path)
    return vf_fix_refuse(err, path, ENAMETOOLONG, "");
  /* the name, and the temp file's: nothing of the user's is removed or written through */
  if (lstat(path, &st) == 0)
    return vf_fix_refuse(err, path, EEXIST,
                         "exists (an existing file or link is never overwritten: name a new one)");
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  if (lstat(tmp, &st) == 0)
    return vf_fix_refuse(err, tmp, EEXIST, "exists (remove it or name another file)");
  return 0;
}

/* The file closed: linked into place when whole (never over a file), else its temp removed. */
static int vf_fix_finish(vf_fix *f, bool abandon, dm_error *err) {
  const char *step = "write";
  if (abandon || f->err) {
    close(f->fd);
    unlink(f->tmp);
    return f->err ? vf_fix_refuse(err, f->path, f->err, "writing") : 0;
  }
  if (dm_fs_tmp_commit(f->fd, f->tmp, f->path, DM_FS_SYNC | DM_FS_NO_REPLACE, &step) < 0)
    return vf_fix_refuse(err, f->path, errno, step);
  return 0;
}

static vf_fix *vf_fix_create(const char *path, dm_error *err) {
  if (dmh_verify_fix_check(path, err) < 0)
    return NULL;
  vf_fix *f = calloc(1, sizeof *f);
  if (!f) {
    dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "verify: out of memory");
    return NULL;
  }
  dm_strlcpy(f->path, path, sizeof f->path);
  f->fd = dm_fs_tmp_open(path, DM_FS_FILE_MODE, f->tmp, sizeof f->tmp);
  if (f->fd < 0) {
    int e = errno;
    free(f);
    vf_fix_refuse(err, path, e, "cannot create");
    return NULL;
  }
  return f;
}

int dmh_verify_fix_write(const char *path, const char *text, size_t len, dm_error *err) {
  vf_fix *f = vf_fix_create(path, err);
  if (!f)
    return -1;
  vf_fix_write(f, text, len);
  int rc = vf_fix_finish(f, false, err);
  free(f);
  return rc;
}

int vf_fix_open(vf_run *r, const char *path, dm_error *err) {
  vf_fix *f = vf_fix_create(path, err);
  if (!f)
    return -1;
  r->fix = f;
  dm_buf b = {0};
  char task[256], source[256];
  dm_buf_printf(&b,
                "-- dmhost verify --fix-sql: the statements that make the target equal to the "
                "source\n-- task %s, source %s; apply them on the target (mariadb < FILE), then "
                "verify again\nSET NAMES %s;\nSET time_zone = '+00:00';\n",
                vf_fix_comment(r->task->name, task, sizeof task),
                vf_fix_comment(r->src->source_id, source, sizeof source),
                mysql_character_set_name(r->target));
  vf_fix_text(r, b.p ? b.p : "", b.len);
  dm_buf_free(&b);
  return 0;
}

void vf_fix_text(vf_run *r, const char *s, size_t n) {
  if (r->fix)
    vf_fix_write(r->fix, s, n);
}

static void vf_fix_end(vf_run *r, dm_buf *b) {
  if (b->oom && !r->fix->err)
    r->fix->err = ENOMEM;
  dm_buf_puts(b, ";\n");
  pthread_mutex_lock(r->lock); /* one statement whole, whichever thread writes */
  vf_fix_text(r, b->p ? b->p : "", b->len);
  r->fix->statements++;
  pthread_mutex_unlock(r->lock);
  dm_buf_free(b);
}

void vf_fix_replace(vf_run *r, const vf_table *t, char **vals, unsigned long *lens) {
  if (!r->fix || r->collect) /* a re-check's pass: the row is not reported yet */
    return;
  dm_buf b = {0};
  char q[DM_DB_QUOTED_IDENT_MAX + 1];
  dm_buf_puts(&b, "REPLACE INTO ");
  vf_sql_name(&b, t->to_schema, t->to_table);
  dm_buf_puts(&b, " (");
  bool first = true;
  for (int i = 0; i < t->n_cols; i++)
    if (!t->cols[i].generated) {
      dm_buf_printf(&b, "%s%s", first ? "" : ", ", dm_db_quoted(t->cols[i].name, q, sizeof q));
      first = false;
    }
  dm_buf_puts(&b, ") VALUES (");
  first = true;
  for (int i = 0; i < t->n_cols; i++)
    if (!t->cols[i].generated) {
      if (!first)
        dm_buf_puts(&b, ", ");
      vf_sql_literal(&b, r->target, vals[i], lens[i], t->cols[i].binary);
      first = false;
    }
  dm_buf_puts(&b, ")");
  vf_fix_end(r, &b);
}

void vf_fix_delete(vf_run *r, const vf_table *t, char **vals, unsigned long *lens) {
  if (!r->fix || r->collect)
    return;
  dm_buf b = {0};
  char q[DM_DB_QUOTED_IDENT_MAX + 1];
  dm_buf_puts(&b, "DELETE FROM ");
  vf_sql_name(&b, t->to_schema, t->to_table);
  dm_buf_puts(&b, " WHERE ");
  /* by the key; without one, by every value (NULL-safe) and one row only */
  int n = t->n_key ? t->n_key : t->n_cols;
  for (int j = 0; j < n; j++) {
    int i = t->n_key ? t->key[j] : j;
    dm_buf_printf(&b, "%s%s %s ", j ? " AND " : "", dm_db_quoted(t->cols[i].name, q, sizeof q),
                  t->n_key ? "=" : "<=>");
    vf_sql_literal(&b, r->target, vals[i], lens[i], t->cols[i].binary);
  }
  if (!t->n_key)
    dm_buf_puts(&b, " LIMIT 1");
  vf_fix_end(r, &b);
}

int vf_fix_close(vf_run *r, bool abandon, dm_error *err) {
  vf_fix *f = r->fix;
  if (!f)
    return 0;
  r->fix = NULL;
  if (!abandon && !f->err) {
    char end[96];
    int n = snprintf(end, sizeof end, "-- %lld statement(s)\n", f->statements);
    vf_fix_write(f, end, (size_t)n);
  }
  int rc = vf_fix_finish(f, abandon, err);
  free(f);
  return rc;
}
