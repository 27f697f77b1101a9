// SPDX-License-Identifier: GPL-2.0-or-later
/* sessions.c — list, load, stop and remove sessions of the state dir; inspect one */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "cli/capview.h"
#include "cli/hostenv.h"
#include "cli/sessions.h"
#include "git/gitguard.h"
#include "ns/cgroup.h"
#include "run/session.h"
#include "util/dl.h"
#include "util/homedir.h"
#include "util/log.h"
#include "util/util.h"

#define PLAN_MAX ((size_t)1024 * 1024)

char *sessions_state_dir(env_getter get)
{
	return homedir_aisb(get, HOMEDIR_STATE);
}

int sessions_state_dir_checked(env_getter get, char **state)
{
	free(*state);
	return homedir_aisb_usable(get, HOMEDIR_STATE, state);
}

bool sessions_id_valid(const char *id)
{
	size_t n = id ? strlen(id) : 0;
	if (n == 0 || n > 64)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((id[i] >= '0' && id[i] <= '9') || (id[i] >= 'a' && id[i] <= 'f')))
			return false;
	return true;
}

/* Field 22 of /proc/PID/stat (start time in ticks). */
static int proc_start(pid_t pid, unsigned long long *out)
{
	int r = proc_start_time(pid, out);
	return r == -ENOENT ? -ESRCH : r;
}

void sessions_info_done(struct session_info *si)
{
	free(si->id);
	free(si->dir);
	free(si->cgroup);
	if (si->plan)
		json_object_put(si->plan);
	memset(si, 0, sizeof(*si));
}

#define RUN_DIRS_MAX 3

/* The run dirs' sessions/ (run/session.h) that are safe to read (session_run_dir_open(): the
 * caller's own, 0700, on tmpfs, no symlink): this environment's run dir, and the two a session
 * started from another environment used (systemd's $XDG_RUNTIME_DIR, /run/user/UID, and the
 * fallback /dev/shm/aisb-UID), so that `aisb ps` in a shell without XDG_RUNTIME_DIR still lists a
 * session started in one with it. Fills @out (freed by the caller) with distinct paths; returns
 * how many. Does not log. */
static size_t run_sessions_dirs(char *out[RUN_DIRS_MAX])
{
	char *cand[RUN_DIRS_MAX] = { session_run_dir(hostenv_get), NULL, NULL };
	size_t n = 0;

	if (asprintf(&cand[1], "/run/user/%u/aisb", (unsigned)getuid()) < 0)
		cand[1] = NULL;
	if (asprintf(&cand[2], "/dev/shm/aisb-%u", (unsigned)getuid()) < 0)
		cand[2] = NULL;
	for (size_t i = 0; i < RUN_DIRS_MAX; i++) {
		bool seen = false;
		int fd;

		for (size_t j = 0; j < i && !seen; j++)
			seen = cand[i] && cand[j] && streq(cand[i], cand[j]);
		fd = cand[i] && !seen ? session_run_dir_open(cand[i], false) : -1;
		if (fd >= 0) {
			close(fd);
			if ((out[n] = path_join(cand[i], "sessions")))
				n++;
		}
	}
	for (size_t i = 0; i < RUN_DIRS_MAX; i++)
		free(cand[i]);
	return n;
}

static void free_dirs(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
}

/* Loads session @id from the directory of session dirs @base. */
static int load_from(const char *base, const char *id, struct session_info *si)
{
	_cleanup_close_ int dfd = -1;
	_cleanup_free_ char *sup = NULL, *init = NULL, *plan = NULL, *cg = NULL;
	struct stat st;
	int pid;
	unsigned long long start, now;

	memset(si, 0, sizeof(*si));
	si->id = strdup(id);
	si->dir = path_join(base, id);
	if (!si->id || !si->dir) {
		sessions_info_done(si);
		return -ENOMEM;
	}
	dfd = open(si->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (dfd < 0) {
		int r = -errno;
		sessions_info_done(si);
		return r == -ENOTDIR || r == -ELOOP ? -ENOENT : r;
	}
	if (fstatat(dfd, "plan.json", &st, AT_SYMLINK_NOFOLLOW) == 0 || fstat(dfd, &st) == 0)
		si->started = st.st_mtime;
	if (read_file_at(dfd, "plan.json", PLAN_MAX, &plan, NULL) >= 0)
		si->plan = json_tokener_parse(plan);
	if (read_file_at(dfd, "supervisor", 128, &sup, NULL) >= 0 &&
	    sscanf(sup, "%d %llu", &pid, &start) == 2 && pid > 0) {
		si->supervisor = pid;
		si->supervisor_start = start;
		si->live = proc_start(pid, &now) == 0 && now == start;
	}
	if (read_file_at(dfd, "init", 64, &init, NULL) >= 0 && sscanf(init, "%d", &pid) == 1 && pid > 0)
		si->init = pid;
	if (read_file_at(dfd, "cgroup", 4096, &cg, NULL) >= 0) {
		cg[strcspn(cg, "\n")] = 0;
		if (*cg)
			si->cgroup = TAKE_PTR(cg);
	}
	return 0;
}

int sessions_load(const char *state_dir, const char *id, struct session_info *si)
{
	_cleanup_free_ char *base = NULL;
	char *run[RUN_DIRS_MAX];
	size_t nrun;
	int r;

	memset(si, 0, sizeof(*si));
	if (!sessions_id_valid(id))
		return -EINVAL;
	if (!(base = path_join(state_dir, "sessions")))
		return -ENOMEM;
	r = load_from(base, id, si);
	if (r != -ENOENT)
		return r;
	nrun = run_sessions_dirs(run);
	for (size_t i = 0; i < nrun && r == -ENOENT; i++)
		r = load_from(run[i], id, si);
	free_dirs(run, nrun);
	return r;
}

static int cmp_started(const void *a, const void *b)
{
	const struct session_info *x = a, *y = b;
	if (x->started != y->started)
		return x->started < y->started ? -1 : 1;
	return strcmp(x->id, y->id);
}

void sessions_list_free(struct session_info *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		sessions_info_done(&v[i]);
	free(v);
}

/* Appends the session dirs under @base to *@v (*@cnt of them), skipping ids already there.
 * Return: 0 or -errno. Does not log. */
static int list_from(const char *base, struct session_info **v, size_t *cnt)
{
	struct dirent *de;
	DIR *d = opendir(base);

	if (!d)
		return errno == ENOENT ? 0 : -errno;
	while ((de = readdir(d))) {
		struct session_info si, *nv;
		bool dup = false;

		if (!sessions_id_valid(de->d_name))
			continue;
		for (size_t i = 0; i < *cnt && !dup; i++)
			dup = (*v)[i].id && streq((*v)[i].id, de->d_name);
		if (dup || load_from(base, de->d_name, &si) < 0)
			continue;
		/* Bounded: a state dir with more sessions than this is not listed further. */
		if (*cnt >= 100000) {
			sessions_info_done(&si);
			break;
		}
		nv = realloc(*v, (*cnt + 1) * sizeof(**v));
		if (!nv) {
			sessions_info_done(&si);
			closedir(d);
			return -ENOMEM;
		}
		*v = nv;
		(*v)[(*cnt)++] = si;
	}
	closedir(d);
	return 0;
}

int sessions_list(const char *state_dir, struct session_info **out, size_t *n)
{
	_cleanup_free_ char *dir = path_join(state_dir, "sessions");
	struct session_info *v = NULL;
	char *run[RUN_DIRS_MAX];
	size_t cnt = 0, nrun;
	int r;

	*out = NULL;
	*n = 0;
	if (!dir)
		return -ENOMEM;
	r = list_from(dir, &v, &cnt);
	nrun = run_sessions_dirs(run);
	for (size_t i = 0; i < nrun && r >= 0; i++)
		r = list_from(run[i], &v, &cnt);
	free_dirs(run, nrun);
	if (r < 0) {
		sessions_list_free(v, cnt);
		return r;
	}
	if (cnt)
		qsort(v, cnt, sizeof(*v), cmp_started);
	*out = v;
	*n = cnt;
	return 0;
}

void sessions_format_age(long long s, char *buf, size_t n)
{
	if (s < 0)
		s = 0;
	if (s < 120)
		snprintf(buf, n, "%llds", s);
	else if (s < 7200)
		snprintf(buf, n, "%lldm", s / 60);
	else if (s < 172800)
		snprintf(buf, n, "%lldh", s / 3600);
	else
		snprintf(buf, n, "%lldd", s / 86400);
}

/* A pidfd for @pid that is checked to still be the process that started at @start. */
static int pidfd_checked(pid_t pid, unsigned long long start)
{
	unsigned long long now;
	int fd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (fd < 0)
		return -errno;
	/* The check after opening: if it still matches, the pidfd names that process. */
	if (proc_start(pid, &now) < 0 || now != start) {
		close(fd);
		return -ESRCH;
	}
	return fd;
}

/* Waits up to @ms for the supervisor to exit. Return: true when it did. */
static bool supervisor_gone(const struct session_info *si, int ms)
{
	for (int waited = 0; waited < ms; waited += 20) {
		struct timespec ts = { 0, 20L * 1000 * 1000 };
		if (!proc_is(si->supervisor, si->supervisor_start))
			return true;
		nanosleep(&ts, NULL);
	}
	return !proc_is(si->supervisor, si->supervisor_start);
}

/* The sandbox's init, when it is still the supervisor's child: a pidfd, or -errno. */
static int init_pidfd(const struct session_info *si)
{
	char path[64];
	_cleanup_free_ char *buf = NULL;
	int fd, ppid = 0;
	char *p;

	if (si->init <= 0)
		return -ESRCH;
	fd = (int)syscall(SYS_pidfd_open, si->init, 0);
	if (fd < 0)
		return -errno;
	/* checked after the pidfd is open: the pid cannot be reused under it from here on */
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)si->init);
	if (read_file_at(AT_FDCWD, path, 4096, &buf, NULL) < 0 || !(p = strrchr(buf, ')')) ||
	    sscanf(p + 1, " %*c %d", &ppid) != 1 || ppid != si->supervisor) {
		close(fd);
		return -ESRCH;
	}
	return fd;
}

int sessions_stop(const struct session_info *si, int grace_ms)
{
	_cleanup_close_ int fd = -1, ifd = -1;

	if (!si->live || si->supervisor <= 0)
		return -ESRCH;
	fd = pidfd_checked(si->supervisor, si->supervisor_start);
	if (fd < 0)
		return fd;
	if (syscall(SYS_pidfd_send_signal, fd, SIGTERM, NULL, 0) < 0)
		return errno == ESRCH ? 0 : -errno;
	if (supervisor_gone(si, grace_ms))
		return 0;
	/* The sandbox ignored SIGTERM: end the sandbox, not its supervisor, so that the supervisor
	 * still checks what it wrote for git (issue 21). SIGKILL to init kills its pid namespace. */
	ifd = init_pidfd(si);
	if (ifd >= 0 && syscall(SYS_pidfd_send_signal, ifd, SIGKILL, NULL, 0) == 0 &&
	    supervisor_gone(si, SESSIONS_CHECK_WAIT_MS))
		return 0;
	/* The supervisor itself does not end: SIGKILL; its check stays pending on disk and the
	 * caller runs it (sessions_pending_checks()). */
	(void)syscall(SYS_pidfd_send_signal, fd, SIGKILL, NULL, 0);
	return supervisor_gone(si, 5000) ? 0 : -ETIMEDOUT;
}

/* Whether @dir looks like a run dir entry aisb made for session @id: ".../aisb/<id>" or
 * ".../aisb-<uid>/<id>", absolute, no "..", outside the session dir. */
static bool is_run_etc(const struct session_info *si, const char *dir)
{
	_cleanup_free_ char *a = NULL, *b = NULL;
	size_t n = strlen(dir);

	if (asprintf(&a, "/aisb/%s", si->id) < 0 || asprintf(&b, "/aisb-%u/%s", (unsigned)getuid(), si->id) < 0)
		return false;
	return path_is_absolute(dir) && !path_has_dotdot(dir) && !path_startswith(dir, si->dir) &&
	       ((n > strlen(a) && streq(dir + n - strlen(a), a)) || (n > strlen(b) && streq(dir + n - strlen(b), b)));
}

/* The generated /etc files of a session whose supervisor was killed, on a tmpfs outside the
 * session dir (run/session.h): where its plan.json says, and where this environment's run dir
 * has them (a supervisor killed before it wrote plan.json). Does not log. */
static void remove_etc_dir(const struct session_info *si)
{
	_cleanup_free_ char *run = session_run_dir(hostenv_get), *here = NULL;
	json_object *v;
	const char *dir;

	if (si->plan && json_object_object_get_ex(si->plan, "etc_dir", &v) && (dir = json_object_get_string(v)) &&
	    is_run_etc(si, dir))
		(void)rm_rf(dir);
	if (run && (here = path_join(run, si->id)) && is_run_etc(si, here))
		(void)rm_rf(here);
}

int sessions_remove(const struct session_info *si)
{
	if (si->live)
		return -EBUSY;
	if (si->cgroup) {
		/* Only a leaf aisb made for this very session: ".../aisb-<id>". */
		_cleanup_free_ char *want = NULL;
		const char *base = strrchr(si->cgroup, '/');
		if (asprintf(&want, "/aisb-%s", si->id) >= 0 && base && streq(base, want) &&
		    path_is_absolute(si->cgroup) && !path_has_dotdot(si->cgroup)) {
			_cleanup_free_ char *sup = NULL;
			(void)cgroup_remove_leaf("", si->cgroup);
			if (asprintf(&sup, "%s.sup", si->cgroup) >= 0)
				(void)rmdir(sup); /* only when empty */
		}
	}
	remove_etc_dir(si);
	return rm_rf(si->dir);
}

int sessions_print_log_lines(const char *state_dir, const char *id, FILE *f)
{
	_cleanup_free_ char *path = path_join(state_dir, "sessions.log");
	_cleanup_fclose_ FILE *in = NULL;
	char line[65536];
	int n = 0;

	if (!path)
		return -ENOMEM;
	in = fopen(path, "re");
	if (!in)
		return 0;
	while (fgets(line, sizeof(line), in)) {
		json_object *o = json_tokener_parse(line), *v;
		if (o && json_object_object_get_ex(o, "id", &v) && json_object_is_type(v, json_type_string) &&
		    streq(json_object_get_string(v), id)) {
			fputs(line, f);
			n++;
		}
		if (o)
			json_object_put(o);
	}
	return n;
}

/* ---- inspect -------------------------------------------------------------------------------- */

static const char *jstr(json_object *o, const char *key)
{
	json_object *v;
	if (o && json_object_object_get_ex(o, key, &v) && json_object_is_type(v, json_type_string))
		return json_object_get_string(v);
	return NULL;
}

static void print_limits(json_object *plan, FILE *f)
{
	json_object *l, *v;
	char mem[32] = "max", cpus[32] = "all";
	int64_t m = 0, pids = 0, q = 0;

	if (!plan || !json_object_object_get_ex(plan, "limits", &l)) {
		fprintf(f, "limits:     (not recorded)\n");
		return;
	}
	if (json_object_object_get_ex(l, "memory_max", &v))
		m = json_object_get_int64(v);
	if (json_object_object_get_ex(l, "pids_max", &v))
		pids = json_object_get_int64(v);
	if (json_object_object_get_ex(l, "cpu_quota_us", &v))
		q = json_object_get_int64(v);
	if (m > 0)
		cgroup_format_size((uint64_t)m, mem, sizeof(mem));
	if (q > 0)
		snprintf(cpus, sizeof(cpus), "%g", (double)q / (double)CGROUP_CPU_PERIOD_US);
	fprintf(f, "limits:     memory %s, pids ", mem);
	if (pids > 0)
		fprintf(f, "%" PRId64, pids);
	else
		fprintf(f, "max");
	fprintf(f, ", cpus %s (enforcement: %s", cpus, jstr(l, "enforcement") ? jstr(l, "enforcement") : "?");
	if (jstr(l, "not_enforced_because"))
		fprintf(f, ": %s", jstr(l, "not_enforced_because"));
	fprintf(f, ")\n");
}

/* The workload's capability sets as libcap reads them from outside (cli/capview.h): an
 * independent check of the drop ns/caps.c made. Prints one line or adds "capabilities". */
static void print_capabilities(pid_t init)
{
	char text[2048];
	pid_t w;
	int r = capview_workload(init, &w);

	if (r < 0) {
		printf("caps:       unknown (no workload process under init pid %d)\n", (int)init);
		return;
	}
	r = capview_pid(w, text, sizeof(text));
	if (r == -ELIBACC)
		printf("caps:       unknown (%s; apt-get install %s)\n", text, dl_libcap.package);
	else if (r < 0)
		printf("caps:       unknown (cannot read pid %d: %s)\n", (int)w, strerror(-r));
	else
		printf("caps:       %s (libcap read-back of workload pid %d)\n", text, (int)w);
}

static void add_capabilities_json(json_object *o, pid_t init)
{
	char text[2048];
	json_object *c;
	pid_t w;
	int r = capview_workload(init, &w);

	if (r < 0 || (r = capview_pid(w, text, sizeof(text))) < 0)
		return;
	c = json_object_new_object();
	json_object_object_add(c, "workload_pid", json_object_new_int(w));
	json_object_object_add(c, "text", json_object_new_string(text));
	json_object_object_add(c, "none", json_object_new_boolean(r == 1));
	json_object_object_add(o, "capabilities", c);
}

int session_inspect(const char *id, bool json)
{
	_cleanup_free_ char *state = sessions_state_dir(hostenv_get);
	struct session_info si;
	time_t now = time(NULL);
	char age[32];
	int r;

	if (sessions_state_dir_checked(hostenv_get, &state) < 0)
		return -EINVAL;
	if (!sessions_id_valid(id))
		return -ENOENT;
	r = sessions_load(state, id, &si);
	if (r == -ENOENT)
		return -ENOENT;
	if (r < 0)
		return log_error_errno(r, "cannot read session '%s': %m", id);
	sessions_format_age(now - si.started, age, sizeof(age));

	if (json) {
		json_object *o = json_object_new_object();
		json_object_object_add(o, "id", json_object_new_string(si.id));
		json_object_object_add(o, "state", json_object_new_string(si.live ? "live" : "ended"));
		json_object_object_add(o, "dir", json_object_new_string(si.dir));
		json_object_object_add(o, "started", json_object_new_int64(si.started));
		json_object_object_add(o, "supervisor_pid", si.live ? json_object_new_int(si.supervisor) : NULL);
		json_object_object_add(o, "init_pid", si.live && si.init ? json_object_new_int(si.init) : NULL);
		json_object_object_add(o, "cgroup", si.cgroup ? json_object_new_string(si.cgroup) : NULL);
		json_object_object_add(o, "plan", si.plan ? json_object_get(si.plan) : NULL);
		if (si.live && si.init)
			add_capabilities_json(o, si.init);
		printf("%s\n", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY |
								 JSON_C_TO_STRING_NOSLASHESCAPE));
		json_object_put(o);
	} else {
		json_object *a, *v;
		printf("session:    %s\n", si.id);
		if (si.live)
			printf("state:      live (supervisor pid %d, init pid %d)\n", (int)si.supervisor, (int)si.init);
		else
			printf("state:      ended (the supervisor is gone; 'aisb clean' removes it)\n");
		printf("started:    %lld (%s ago)\n", si.started, age);
		printf("dir:        %s\n", si.dir);
		if (si.plan && json_object_object_get_ex(si.plan, "command", &a) &&
		    json_object_is_type(a, json_type_array)) {
			printf("command:   ");
			for (size_t i = 0; i < json_object_array_length(a); i++)
				printf(" %s", json_object_get_string(json_object_array_get_idx(a, i)));
			printf("\n");
		}
		printf("rootfs:     %s\n", jstr(si.plan, "rootfs") ? jstr(si.plan, "rootfs") : "?");
		printf("project:    %s -> %s\n", jstr(si.plan, "project") ? jstr(si.plan, "project") : "none",
		       jstr(si.plan, "project_dst") ? jstr(si.plan, "project_dst") : "-");
		printf("home:       %s\n", jstr(si.plan, "home") ? jstr(si.plan, "home") : "?");
		printf("network:    %s\n", jstr(si.plan, "net") ? jstr(si.plan, "net") : "?");
		print_limits(si.plan, stdout);
		printf("cgroup:     %s\n", si.cgroup ? si.cgroup : "none");
		if (si.live && si.init)
			print_capabilities(si.init);
		if (si.plan && json_object_object_get_ex(si.plan, "env", &a) &&
		    json_object_is_type(a, json_type_array)) {
			printf("env names: ");
			for (size_t i = 0; i < json_object_array_length(a); i++)
				printf(" %s", json_object_get_string(json_object_array_get_idx(a, i)));
			printf("%s\n", json_object_array_length(a) ? "" : " (none)");
		}
		if (si.plan && json_object_object_get_ex(si.plan, "mounts", &a) &&
		    json_object_is_type(a, json_type_array))
			for (size_t i = 0; i < json_object_array_length(a); i++) {
				json_object *m = json_object_array_get_idx(a, i);
				bool ro = json_object_object_get_ex(m, "ro", &v) && json_object_get_boolean(v);
				printf("mount:      %s -> %s (%s)\n", jstr(m, "src") ? jstr(m, "src") : "?",
				       jstr(m, "dst") ? jstr(m, "dst") : "?", ro ? "read-only" : "read-write");
			}
	}
	sessions_info_done(&si);
	return 0;
}

int sessions_pending_checks(bool preview)
{
	_cleanup_free_ char *state = sessions_state_dir(hostenv_get), *dir = NULL;
	struct gitguard_verdict v = { 0 };
	int r;

	if (!state || !(dir = path_join(state, "pending")))
		return 0;
	r = gitguard_pending_run(dir, stderr, preview, &v);
	if (r < 0)
		log_warn_errno(r, "cannot run the pending git checks in '%s': %m; a session may have ended without "
			       "checking what it wrote for git", dir);
	return r;
}
