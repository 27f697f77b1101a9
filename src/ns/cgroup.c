// SPDX-License-Identifier: GPL-2.0-or-later
/* cgroup.c — cgroup v2 limits: parse, discover, check delegation, create, attach, report, destroy */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ns/cgroup.h"
#include "util/container.h"
#include "util/log.h"
#include "util/rlimit.h"
#include "util/util.h"

#define CGROUP_FILE_MAX ((size_t)64 * 1024)

static const char *const ctrl_names[] = { "memory", "pids", "cpu" };

/* ---- parsing ---------------------------------------------------------------------------- */

/* Parses "I[.F]" with at most @max_frac decimals into an integer scaled by 10^max_frac.
 * Rejects signs, spaces, empty parts and overflow. */
static int parse_decimal(const char *s, unsigned max_frac, const char **end, uint64_t *out)
{
	uint64_t ip = 0, fp = 0, scale = 1;
	unsigned nfrac = 0;
	const char *p = s;

	if (!isdigit((unsigned char)*p))
		return -EINVAL;
	for (; isdigit((unsigned char)*p); p++) {
		if (ip > (UINT64_MAX - 9) / 10)
			return -ERANGE;
		ip = ip * 10 + (uint64_t)(*p - '0');
	}
	if (*p == '.') {
		p++;
		if (!isdigit((unsigned char)*p))
			return -EINVAL;
		for (; isdigit((unsigned char)*p); p++) {
			if (nfrac == max_frac) {
				if (*p != '0')
					return -EINVAL; /* more precision than we keep */
				continue;
			}
			fp = fp * 10 + (uint64_t)(*p - '0');
			nfrac++;
		}
	}
	for (unsigned i = 0; i < max_frac; i++)
		scale *= 10;
	for (; nfrac < max_frac; nfrac++)
		fp *= 10;
	if (ip > UINT64_MAX / scale)
		return -ERANGE;
	*out = ip * scale + fp;
	*end = p;
	return 0;
}

int cgroup_parse_size(const char *s, uint64_t *out)
{
	uint64_t v, mult = 1;
	const char *end;
	int r;

	if (!s)
		return -EINVAL;
	if (streq(s, "max")) {
		*out = 0;
		return 0;
	}
	/* Value scaled by 1000 so "1.5g" stays exact. */
	r = parse_decimal(s, 3, &end, &v);
	if (r < 0)
		return r;
	switch (tolower((unsigned char)*end)) {
	case 0: mult = 1; break;
	case 'k': mult = 1ULL << 10; end++; break;
	case 'm': mult = 1ULL << 20; end++; break;
	case 'g': mult = 1ULL << 30; end++; break;
	case 't': mult = 1ULL << 40; end++; break;
	case 'b': mult = 1; break;
	default: return -EINVAL;
	}
	if (mult > 1 && tolower((unsigned char)*end) == 'i')
		end++;
	if (tolower((unsigned char)*end) == 'b')
		end++;
	if (*end)
		return -EINVAL;
	if (mult == 1 && v % 1000)
		return -EINVAL; /* a fraction of a byte */
	if (v > UINT64_MAX / mult)
		return -ERANGE;
	v = v * mult / 1000;
	if (v == 0)
		return -ERANGE;
	*out = v;
	return 0;
}

int cgroup_parse_cpus(const char *s, uint64_t *quota_us)
{
	uint64_t milli;
	const char *end;
	int r;

	if (!s)
		return -EINVAL;
	if (streq(s, "max")) {
		*quota_us = 0;
		return 0;
	}
	r = parse_decimal(s, 3, &end, &milli);
	if (r < 0)
		return r;
	if (*end)
		return -EINVAL;
	/* 0.01 cpu = 1 ms per 100 ms: the kernel refuses quotas below 1 ms. */
	if (milli < 10 || milli > CGROUP_CPUS_MAX * 1000)
		return -ERANGE;
	*quota_us = milli * (CGROUP_CPU_PERIOD_US / 1000);
	return 0;
}

int cgroup_parse_pids(const char *s, uint64_t *out)
{
	unsigned long long v;

	if (!s)
		return -EINVAL;
	if (streq(s, "max")) {
		*out = 0;
		return 0;
	}
	if (parse_u64(s, &v) < 0)
		return -EINVAL;
	if (v < CGROUP_PIDS_MIN || v > (1ULL << 22)) /* PID_MAX_LIMIT */
		return -ERANGE;
	*out = v;
	return 0;
}

void cgroup_format_size(uint64_t bytes, char *buf, size_t n)
{
	static const char *const units[] = { "KiB", "MiB", "GiB", "TiB" };
	int u = -1;
	uint64_t div = 1;

	while (u < 3 && bytes >= div * 1024 && bytes % (div * 1024 / 8) == 0) {
		div *= 1024;
		u++;
	}
	if (u < 0) {
		snprintf(buf, n, "%" PRIu64 " bytes", bytes);
		return;
	}
	if (bytes % div == 0)
		snprintf(buf, n, "%" PRIu64 " %s", bytes / div, units[u]);
	else
		snprintf(buf, n, "%.3g %s", (double)bytes / (double)div, units[u]);
}

void cgroup_format_cpu_max(uint64_t quota_us, char *buf, size_t n)
{
	if (quota_us)
		snprintf(buf, n, "%" PRIu64 " %llu\n", quota_us, CGROUP_CPU_PERIOD_US);
	else
		snprintf(buf, n, "max %llu\n", CGROUP_CPU_PERIOD_US);
}

int cgroup_limits_parse(const char *memory, const char *pids, const char *cpus,
			struct cgroup_limits *l)
{
	int r;

	memset(l, 0, sizeof(*l));
	l->memory_max = CGROUP_MEMORY_DEFAULT;
	l->pids_max = CGROUP_PIDS_DEFAULT;
	if (memory) {
		r = cgroup_parse_size(memory, &l->memory_max);
		if (r < 0)
			return log_error("invalid --memory '%s': expected bytes or a size like 512M, 2G, "
					 "1.5g, or max", memory), -EINVAL;
		if (l->memory_max && l->memory_max < CGROUP_MEMORY_MIN)
			return log_error("invalid --memory '%s': the minimum is 8M", memory), -EINVAL;
		l->memory_explicit = true;
	}
	if (pids) {
		r = cgroup_parse_pids(pids, &l->pids_max);
		if (r < 0)
			return log_error("invalid --pids '%s': expected a number from 2 to 4194304, or max",
					 pids), -EINVAL;
		l->pids_explicit = true;
	}
	if (cpus) {
		r = cgroup_parse_cpus(cpus, &l->cpu_quota_us);
		if (r < 0)
			return log_error("invalid --cpus '%s': expected a number of cpus from 0.01 to 4096 "
					 "(like 2 or 1.5), or max", cpus), -EINVAL;
		l->cpus_explicit = true;
	}
	return 0;
}

unsigned cgroup_limits_wanted(const struct cgroup_limits *l)
{
	unsigned m = 0;
	if (l->memory_max)
		m |= CGROUP_MEMORY;
	if (l->pids_max)
		m |= CGROUP_PIDS;
	if (l->cpu_quota_us)
		m |= CGROUP_CPU;
	return m;
}

int cgroup_parse_proc_cgroup(const char *text, char **own)
{
	const char *line = text;

	while (line && *line) {
		const char *nl = strchr(line, '\n');
		size_t len = nl ? (size_t)(nl - line) : strlen(line);

		if (len >= 3 && strncmp(line, "0::", 3) == 0) {
			if (len == 3 || line[3] != '/')
				return -EINVAL;
			*own = strndup(line + 3, len - 3);
			return *own ? 0 : -ENOMEM;
		}
		line = nl ? nl + 1 : NULL;
	}
	return -ENOENT;
}

/* Decodes mountinfo's octal escapes (\040 space, \011 tab, \012 newline, \134 backslash). */
static char *unescape_field(const char *s, size_t len)
{
	char *out = malloc(len + 1), *o = out;
	if (!out)
		return NULL;
	for (size_t i = 0; i < len; i++) {
		if (s[i] == '\\' && i + 3 < len &&
		    s[i + 1] >= '0' && s[i + 1] <= '3' && s[i + 2] >= '0' && s[i + 2] <= '7' &&
		    s[i + 3] >= '0' && s[i + 3] <= '7') {
			*o++ = (char)(((s[i + 1] - '0') << 6) | ((s[i + 2] - '0') << 3) | (s[i + 3] - '0'));
			i += 3;
		} else
			*o++ = s[i];
	}
	*o = 0;
	return out;
}

int cgroup_parse_mountinfo(const char *text, char **mount, char **mnt_root)
{
	const char *line = text;

	while (line && *line) {
		const char *nl = strchr(line, '\n');
		size_t len = nl ? (size_t)(nl - line) : strlen(line);
		const char *f[6] = { 0 };
		size_t flen[6] = { 0 };
		const char *p = line, *e = line + len, *sep;
		int nf = 0;

		/* Fields 1-5: id parent maj:min root mountpoint. */
		while (nf < 5 && p < e) {
			const char *q = p;
			while (q < e && *q != ' ')
				q++;
			f[nf] = p;
			flen[nf] = (size_t)(q - p);
			nf++;
			p = q < e ? q + 1 : q;
		}
		sep = nf == 5 ? strstr(p, " - ") : NULL;
		if (sep && sep < e && (size_t)(e - (sep + 3)) >= 8 && strncmp(sep + 3, "cgroup2 ", 8) == 0) {
			*mnt_root = unescape_field(f[3], flen[3]);
			*mount = unescape_field(f[4], flen[4]);
			if (!*mnt_root || !*mount) {
				free(*mnt_root);
				free(*mount);
				*mnt_root = *mount = NULL;
				return -ENOMEM;
			}
			return 0;
		}
		line = nl ? nl + 1 : NULL;
	}
	return -ENOENT;
}

unsigned cgroup_parse_controllers(const char *text)
{
	unsigned m = 0;
	const char *p = text;

	while (p && *p) {
		size_t len;
		while (*p == ' ' || *p == '\n' || *p == '\t')
			p++;
		len = strcspn(p, " \n\t");
		for (size_t i = 0; i < ELEMENTSOF(ctrl_names); i++)
			if (len == strlen(ctrl_names[i]) && strncmp(p, ctrl_names[i], len) == 0)
				m |= 1u << i;
		p += len;
	}
	return m;
}

void cgroup_mask_to_string(unsigned mask, char *buf, size_t n)
{
	size_t off = 0;

	if (n)
		buf[0] = 0;
	for (size_t i = 0; i < ELEMENTSOF(ctrl_names); i++) {
		int k;
		if (!(mask & (1u << i)))
			continue;
		k = snprintf(buf + off, n > off ? n - off : 0, "%s%s", off ? " " : "", ctrl_names[i]);
		if (k > 0)
			off += (size_t)k;
	}
}

/* ---- discovery and delegation ------------------------------------------------------------ */

static char *rooted(const char *root, const char *path)
{
	char *r;
	if (!root || !*root)
		return strdup(path);
	if (asprintf(&r, "%s%s", root, path) < 0)
		return NULL;
	return r;
}

static int read_rooted(const char *root, const char *path, char **out)
{
	_cleanup_free_ char *p = rooted(root, path);
	if (!p)
		return -ENOMEM;
	return read_file_at(AT_FDCWD, p, CGROUP_FILE_MAX, out, NULL);
}

void cgroup_place_done(struct cgroup_place *pl)
{
	free(pl->mount);
	free(pl->own);
	free(pl->dir);
	memset(pl, 0, sizeof(*pl));
}

int cgroup_place_find(const char *root, struct cgroup_place *pl)
{
	_cleanup_free_ char *cg = NULL, *mi = NULL, *mnt_root = NULL;
	const char *rel;
	int r;

	memset(pl, 0, sizeof(*pl));
	r = read_rooted(root, "/proc/self/cgroup", &cg);
	if (r < 0)
		return r;
	r = read_rooted(root, "/proc/self/mountinfo", &mi);
	if (r < 0)
		return r;
	r = cgroup_parse_proc_cgroup(cg, &pl->own);
	if (r < 0)
		goto fail;
	r = cgroup_parse_mountinfo(mi, &pl->mount, &mnt_root);
	if (r < 0)
		goto fail;
	/* "/.." means the own cgroup is outside our cgroup namespace's root: not reachable. */
	if (path_has_dotdot(pl->own)) {
		r = -ENOENT;
		goto fail;
	}
	rel = pl->own;
	if (!streq(mnt_root, "/")) {
		if (!path_startswith(pl->own, mnt_root)) {
			r = -ENOENT; /* the mount shows another part of the tree */
			goto fail;
		}
		rel = pl->own + strlen(mnt_root);
	}
	pl->dir = streq(rel, "/") || !*rel ? strdup(pl->mount) : path_join(pl->mount, rel);
	if (!pl->dir) {
		r = -ENOMEM;
		goto fail;
	}
	return 0;
fail:
	cgroup_place_done(pl);
	return r;
}

static bool writable_at(const char *root, const char *dir, const char *file)
{
	_cleanup_free_ char *d = rooted(root, dir), *p = NULL;
	if (!d)
		return false;
	p = file ? path_join(d, file) : strdup(d);
	return p && faccessat(AT_FDCWD, p, W_OK, AT_EACCESS) == 0;
}

int cgroup_check_dir(const char *root, const char *dir, pid_t self, struct cgroup_check *c)
{
	_cleanup_free_ char *d = rooted(root, dir), *ctl = NULL, *sub = NULL, *procs = NULL;
	_cleanup_close_ int fd = -1;
	struct stat st;
	int r;

	memset(c, 0, sizeof(*c));
	if (!d)
		return -ENOMEM;
	fd = open(d, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	r = read_file_at(fd, "cgroup.controllers", CGROUP_FILE_MAX, &ctl, NULL);
	if (r < 0)
		return r;
	c->available = cgroup_parse_controllers(ctl);
	snprintf(c->offered, sizeof(c->offered), "%.*s", (int)strcspn(ctl, "\n"), ctl);
	if (read_file_at(fd, "cgroup.subtree_control", CGROUP_FILE_MAX, &sub, NULL) >= 0)
		c->enabled = cgroup_parse_controllers(sub);
	/* The root cgroup has no cgroup.events; every other one has. */
	c->is_root = fstatat(fd, "cgroup.events", &st, 0) < 0 && errno == ENOENT;
	c->writable = writable_at(root, dir, NULL) && writable_at(root, dir, "cgroup.procs") &&
		      writable_at(root, dir, "cgroup.subtree_control");
	r = read_file_at(fd, "cgroup.procs", CGROUP_FILE_MAX * 16, &procs, NULL);
	if (r < 0)
		return r;
	c->only_self = true;
	for (char *p = procs; *p;) {
		unsigned long long pid;
		char *nl = strchr(p, '\n');
		if (nl)
			*nl = 0;
		if (*p) {
			c->n_procs++;
			if (parse_u64(p, &pid) < 0 || (pid_t)pid != self)
				c->only_self = false;
		}
		if (!nl)
			break;
		p = nl + 1;
	}
	return 0;
}

bool cgroup_check_usable(const struct cgroup_check *c, unsigned want, char *why, size_t n)
{
	char names[64];
	unsigned missing = want & ~c->available;

	if (n)
		why[0] = 0;
	if (missing) {
		cgroup_mask_to_string(missing, names, sizeof(names));
		snprintf(why, n, "the cgroup v2 controllers '%s' are not available here", names);
		return false;
	}
	if (!c->writable) {
		snprintf(why, n, "the own cgroup is not delegated to this user (not writable)");
		return false;
	}
	/* Controllers already enabled for children: leaves can be made directly. */
	if ((c->enabled & want) == want || c->is_root)
		return true;
	/* Otherwise we must move ourselves into a leaf and enable them: only possible when no
	 * other process shares the cgroup ("no internal processes" rule). */
	if (!c->only_self) {
		snprintf(why, n, "the own cgroup holds %u other process%s, so controllers cannot be "
			 "enabled below it", c->n_procs ? c->n_procs - 1 : 0, c->n_procs == 2 ? "" : "es");
		return false;
	}
	return true;
}

/* ---- the session leaf ---------------------------------------------------------------------- */

static int write_ctl(const char *dir, const char *file, const char *val)
{
	_cleanup_free_ char *p = path_join(dir, file);
	_cleanup_close_ int fd = -1;

	if (!p)
		return -ENOMEM;
	/* Never O_CREAT: a missing control file means a missing controller. */
	fd = open(p, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	return write_full(fd, val, strlen(val));
}

static int write_pid(const char *dir, pid_t pid)
{
	char buf[32];
	snprintf(buf, sizeof(buf), "%d\n", (int)pid);
	return write_ctl(dir, "cgroup.procs", buf);
}

static int write_u64_or_max(const char *dir, const char *file, uint64_t v)
{
	char buf[32];
	if (v)
		snprintf(buf, sizeof(buf), "%" PRIu64 "\n", v);
	else
		snprintf(buf, sizeof(buf), "max\n");
	return write_ctl(dir, file, buf);
}

static int enable_ctl(const char *dir, unsigned mask)
{
	char buf[64];
	size_t off = 0;

	buf[0] = 0;
	for (size_t i = 0; i < ELEMENTSOF(ctrl_names); i++)
		if (mask & (1u << i)) {
			int k = snprintf(buf + off, sizeof(buf) - off, "%s+%s", off ? " " : "", ctrl_names[i]);
			if (k > 0)
				off += (size_t)k;
		}
	return write_ctl(dir, "cgroup.subtree_control", buf);
}

static int disable_ctl(const char *dir, unsigned mask)
{
	char buf[64];
	size_t off = 0;

	buf[0] = 0;
	for (size_t i = 0; i < ELEMENTSOF(ctrl_names); i++)
		if (mask & (1u << i)) {
			int k = snprintf(buf + off, sizeof(buf) - off, "%s-%s", off ? " " : "", ctrl_names[i]);
			if (k > 0)
				off += (size_t)k;
		}
	return write_ctl(dir, "cgroup.subtree_control", buf);
}

void cgroup_done(struct cgroup *cg)
{
	free(cg->root);
	free(cg->parent);
	free(cg->sup);
	free(cg->leaf);
	memset(cg, 0, sizeof(*cg));
}

/* Stage: probe. Should: find the own cgroup under @root, record it in @cg and check in @c that
 * it can give the controllers @want. Mustn't: change anything. Return: 0, -EOPNOTSUPP (@why
 * says why), -errno. Logs on failure (but -EOPNOTSUPP). */
static int create_probe(const char *root, unsigned want, struct cgroup *cg, struct cgroup_check *c, char *why,
			size_t why_len)
{
	struct cgroup_place pl;
	int r = cgroup_place_find(root, &pl);

	if (r == -ENOENT) {
		snprintf(why, why_len, "no cgroup v2 hierarchy is mounted, or the own cgroup is not "
			 "visible in it");
		return -EOPNOTSUPP;
	}
	if (r < 0)
		return log_error_errno(r, "cannot find the own cgroup: %m");
	cg->root = strdup(root ? root : "");
	cg->parent = rooted(root, pl.dir);
	if (!cg->root || !cg->parent) {
		cgroup_place_done(&pl);
		return -ENOMEM;
	}
	r = cgroup_check_dir(root, pl.dir, getpid(), c);
	if (r < 0) {
		snprintf(why, why_len, "the own cgroup '%s' cannot be read (%s)", pl.dir, strerror(-r));
		cgroup_place_done(&pl);
		return -EOPNOTSUPP;
	}
	if (!cgroup_check_usable(c, want, why, why_len)) {
		size_t k = strlen(why);
		snprintf(why + k, why_len - k, " (cgroup2 at '%s' offers: '%s')", pl.mount, c->offered);
		cgroup_place_done(&pl);
		return -EOPNOTSUPP;
	}
	cgroup_place_done(&pl);
	return 0;
}

/* Stage: delegate. Should: enable the controllers of @want the own cgroup lacks in its
 * subtree_control, first moving this process into @supname when it is not the root (a cgroup
 * with processes accepts no controllers). Mustn't: move anything but this (single-threaded)
 * process. Return: 0 or -errno; what it did is in @cg for cgroup_destroy(). Logs on failure. */
static int create_delegate(struct cgroup *cg, const struct cgroup_check *c, unsigned want, const char *supname)
{
	int r;

	if ((c->enabled & want) != want && !c->is_root) {
		cg->sup = path_join(cg->parent, supname);
		if (!cg->sup)
			return -ENOMEM;
		if (mkdir(cg->sup, 0755) < 0 && errno != EEXIST)
			return log_error_errno(-errno, "cannot create cgroup '%s': %m", cg->sup);
		r = write_pid(cg->sup, getpid());
		if (r < 0)
			return log_error_errno(r, "cannot move the supervisor into cgroup '%s': %m", cg->sup);
	}
	if ((c->enabled & want) != want) {
		unsigned add = want & ~c->enabled;
		r = enable_ctl(cg->parent, add);
		if (r < 0)
			return log_error_errno(r, "cannot enable controllers in '%s/cgroup.subtree_control': %m",
					       cg->parent);
		cg->enabled_by_us = add;
	}
	return 0;
}

/* Stage: leaf. Should: create the sandbox's cgroup @name and write the limits of @want into it.
 * Return: 0 or -errno; the leaf is in @cg for cgroup_destroy(). Logs on failure. */
static int create_leaf(struct cgroup *cg, const char *name, const struct cgroup_limits *l, unsigned want)
{
	char buf[64];
	int r;

	cg->leaf = path_join(cg->parent, name);
	if (!cg->leaf)
		return -ENOMEM;
	if (mkdir(cg->leaf, 0755) < 0) {
		r = log_error_errno(-errno, "cannot create cgroup '%s': %m", cg->leaf);
		free(cg->leaf);
		cg->leaf = NULL;
		return r;
	}
	if (want & CGROUP_MEMORY) {
		r = write_u64_or_max(cg->leaf, "memory.max", l->memory_max);
		if (r < 0)
			return log_error_errno(r, "cannot write '%s/memory.max': %m", cg->leaf);
		/* Without this the limit is RAM + all of swap. Missing without swap accounting:
		 * then there is no swap to escape into. */
		r = write_ctl(cg->leaf, "memory.swap.max", "0\n");
		if (r < 0 && r != -ENOENT)
			return log_error_errno(r, "cannot write '%s/memory.swap.max': %m", cg->leaf);
		/* memory.oom.group stays 0: the kernel kills the biggest process (usually the
		 * culprit) and an agent harness survives a test that blew the limit. */
	}
	if (want & CGROUP_PIDS) {
		r = write_u64_or_max(cg->leaf, "pids.max", l->pids_max);
		if (r < 0)
			return log_error_errno(r, "cannot write '%s/pids.max': %m", cg->leaf);
	}
	if (want & CGROUP_CPU) {
		cgroup_format_cpu_max(l->cpu_quota_us, buf, sizeof(buf));
		r = write_ctl(cg->leaf, "cpu.max", buf);
		if (r < 0)
			return log_error_errno(r, "cannot write '%s/cpu.max': %m", cg->leaf);
	}
	return 0;
}

int cgroup_create(const char *root, const char *id, const struct cgroup_limits *l,
		  struct cgroup *cg, char *why, size_t why_len)
{
	struct cgroup_check c;
	_cleanup_free_ char *name = NULL, *supname = NULL;
	unsigned want = cgroup_limits_wanted(l);
	int r;

	memset(cg, 0, sizeof(*cg));
	if (why_len)
		why[0] = 0;
	cg->limits = *l;
	r = create_probe(root, want, cg, &c, why, why_len);
	if (r < 0)
		return r;
	if (asprintf(&name, "aisb-%s", id) < 0 || asprintf(&supname, "aisb-%s.sup", id) < 0)
		return -ENOMEM;
	r = create_delegate(cg, &c, want, supname);
	if (r >= 0)
		r = create_leaf(cg, name, l, want);
	if (r < 0)
		(void)cgroup_destroy(cg);
	return r;
}

int cgroup_attach(const struct cgroup *cg, pid_t pid)
{
	int r;
	if (!cg->leaf)
		return -EINVAL;
	r = write_pid(cg->leaf, pid);
	if (r < 0)
		return log_error_errno(r, "cannot move pid %d into cgroup '%s': %m", (int)pid, cg->leaf);
	return 0;
}

int cgroup_open_leaf(const struct cgroup *cg)
{
	int fd;
	if (!cg->leaf)
		return -EINVAL;
	fd = open(cg->leaf, O_PATH | O_DIRECTORY | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

/* Finds "KEY N" in a flat-keyed cgroup file. */
static uint64_t flat_key(const char *text, const char *key)
{
	size_t kl = strlen(key);
	for (const char *p = text; p && *p;) {
		if (strncmp(p, key, kl) == 0 && p[kl] == ' ')
			return strtoull(p + kl + 1, NULL, 10);
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	return 0;
}

uint64_t cgroup_parse_oom_kills(const char *events_text)
{
	return flat_key(events_text, "oom_kill");
}

int cgroup_read_oom_kills(const struct cgroup *cg, uint64_t *kills)
{
	_cleanup_free_ char *p = NULL, *text = NULL;
	int r;

	*kills = 0;
	if (!cg->leaf)
		return -EINVAL;
	p = path_join(cg->leaf, "memory.events");
	if (!p)
		return -ENOMEM;
	r = read_file_at(AT_FDCWD, p, CGROUP_FILE_MAX, &text, NULL);
	if (r < 0)
		return r;
	*kills = cgroup_parse_oom_kills(text);
	return 0;
}

static uint64_t leaf_key(const struct cgroup *cg, const char *file, const char *key)
{
	_cleanup_free_ char *p = path_join(cg->leaf, file), *text = NULL;
	if (!p || read_file_at(AT_FDCWD, p, CGROUP_FILE_MAX, &text, NULL) < 0)
		return 0;
	if (!key)
		return strtoull(text, NULL, 10);
	return flat_key(text, key);
}

int cgroup_read_stats(const struct cgroup *cg, struct cgroup_stats *st)
{
	memset(st, 0, sizeof(*st));
	if (!cg->leaf)
		return -EINVAL;
	st->oom_kill = leaf_key(cg, "memory.events", "oom_kill");
	st->pids_max_events = leaf_key(cg, "pids.events", "max");
	st->nr_throttled = leaf_key(cg, "cpu.stat", "nr_throttled");
	st->throttled_usec = leaf_key(cg, "cpu.stat", "throttled_usec");
	st->memory_peak = leaf_key(cg, "memory.peak", NULL);
	return 0;
}

int cgroup_oom_report(int exit_code, uint64_t oom_kills, uint64_t memory_max, char *msg, size_t n)
{
	char lim[32];

	if (n)
		msg[0] = 0;
	if (!oom_kills)
		return exit_code;
	if (memory_max)
		cgroup_format_size(memory_max, lim, sizeof(lim));
	else
		snprintf(lim, sizeof(lim), "none set");
	if (exit_code == 128 + SIGKILL) {
		snprintf(msg, n, "killed: out of memory (limit %s)", lim);
		return 128 + SIGKILL;
	}
	snprintf(msg, n, "%" PRIu64 " process%s in the sandbox %s killed: out of memory (limit %s)",
		 oom_kills, oom_kills == 1 ? "" : "es", oom_kills == 1 ? "was" : "were", lim);
	return exit_code;
}

/* Kills every process in @dir and waits (bounded) until cgroup.events says "populated 0". */
static int kill_and_wait(const char *dir)
{
	_cleanup_free_ char *events = path_join(dir, "cgroup.events");
	bool have_kill;
	int r;

	if (!events)
		return -ENOMEM;
	r = write_ctl(dir, "cgroup.kill", "1\n");
	have_kill = r >= 0;
	/* 5 s in 10 ms steps: SIGKILL of a cgroup's processes completes in well under that. */
	for (int i = 0; i < 500; i++) {
		_cleanup_free_ char *text = NULL, *procs = NULL;
		struct timespec ts = { 0, 10L * 1000 * 1000 };

		if (read_file_at(AT_FDCWD, events, CGROUP_FILE_MAX, &text, NULL) < 0)
			return 0; /* gone already, or not a cgroup */
		if (strstr(text, "populated 0"))
			return 0;
		if (!have_kill) {
			/* Before Linux 5.14: kill what is listed; repeat to catch forks. */
			_cleanup_free_ char *pp = path_join(dir, "cgroup.procs");
			if (pp && read_file_at(AT_FDCWD, pp, CGROUP_FILE_MAX * 16, &procs, NULL) >= 0)
				for (char *p = procs; p && *p;) {
					unsigned long long pid;
					char *nl = strchr(p, '\n');
					if (nl)
						*nl = 0;
					if (parse_u64(p, &pid) == 0 && pid > 1)
						(void)kill((pid_t)pid, SIGKILL);
					p = nl ? nl + 1 : NULL;
				}
		}
		nanosleep(&ts, NULL);
	}
	return -EBUSY;
}

int cgroup_remove_leaf(const char *root, const char *leaf)
{
	_cleanup_free_ char *d = rooted(root, leaf);
	int r;

	if (!d)
		return -ENOMEM;
	r = kill_and_wait(d);
	if (rmdir(d) < 0 && errno != ENOENT)
		return r < 0 ? r : -errno;
	return 0;
}

int cgroup_destroy(struct cgroup *cg)
{
	int r = 0, k;

	if (cg->leaf) {
		k = kill_and_wait(cg->leaf);
		if (rmdir(cg->leaf) < 0 && errno != ENOENT) {
			k = -errno;
			log_error_errno(k, "cannot remove cgroup '%s': %m", cg->leaf);
		}
		if (k < 0 && r == 0)
			r = k;
		free(cg->leaf);
		cg->leaf = NULL;
	}
	/* Undo the supervisor leaf only from the process that sits in it, and only when no other
	 * leaf still needs the controllers (disabling then fails with EBUSY and we leave it). */
	if (cg->sup) {
		if (cg->enabled_by_us && disable_ctl(cg->parent, cg->enabled_by_us) >= 0)
			cg->enabled_by_us = 0;
		if (!cg->enabled_by_us && write_pid(cg->parent, getpid()) >= 0)
			/* Helpers of a SIGKILLed supervisor (pasta, by its parent-death signal) may
			 * still be dying in the supervisor leaf: retry for up to 2 s. */
			for (int i = 0; i < 100 && rmdir(cg->sup) < 0 && errno == EBUSY; i++) {
				struct timespec ts = { 0, 20L * 1000 * 1000 };
				nanosleep(&ts, NULL);
			}
		free(cg->sup);
		cg->sup = NULL;
	}
	return r;
}

int cgroup_apply_rlimits(const struct cgroup_limits *l)
{
	if (!l->pids_max)
		return 0;
	/* never above what the caller ran aisb with (util/rlimit.h) */
	return rlimit_lower(RLIMIT_NPROC, (rlim_t)l->pids_max, false, NULL);
}

bool cgroup_probe(const char *root, unsigned want, char *why, size_t n)
{
	struct cgroup_place pl;
	struct cgroup_check c;
	bool ok;
	int r;

	r = cgroup_place_find(root, &pl);
	if (r < 0) {
		snprintf(why, n, "no cgroup v2 hierarchy is mounted, or the own cgroup is not visible "
			 "in it");
		return false;
	}
	r = cgroup_check_dir(root, pl.dir, getpid(), &c);
	if (r < 0) {
		snprintf(why, n, "the own cgroup '%s' cannot be read (%s)", pl.dir, strerror(-r));
		cgroup_place_done(&pl);
		return false;
	}
	ok = cgroup_check_usable(&c, want, why, n);
	if (!ok) {
		size_t k = strlen(why);
		snprintf(why + k, n - k, " (cgroup2 at '%s' offers: '%s')", pl.mount, c.offered);
	}
	cgroup_place_done(&pl);
	return ok;
}

int cgroup_degrade(const struct cgroup_limits *l, const char *why, bool host_root, char *warn,
		   size_t n)
{
	char names[64], mem[32], pidsbuf[32];
	unsigned explicit_mask = 0;

	if (l->memory_explicit && l->memory_max)
		explicit_mask |= CGROUP_MEMORY;
	if (l->pids_explicit && l->pids_max)
		explicit_mask |= CGROUP_PIDS;
	if (l->cpus_explicit && l->cpu_quota_us)
		explicit_mask |= CGROUP_CPU;
	if (explicit_mask) {
		enum container_engine e = container_detect(NULL);
		cgroup_mask_to_string(explicit_mask, names, sizeof(names));
		/* in a container the host's boot options are out of reach: the engine is asked */
		if (e != CONTAINER_NONE)
			log_error("cannot enforce the %s limit: %s; fix: %s, or drop the limit (see 'aisb doctor' "
				  "and docs/ci.md)", names, why, container_fix(e, CONTAINER_NEED_CGROUP));
		else
			log_error("cannot enforce the %s limit: %s; fix: run aisb where a cgroup v2 subtree is "
				  "delegated to you (on a systemd host with the unified hierarchy: 'systemd-run "
				  "--user --scope -p Delegate=yes aisb ...'; on this kind of hybrid host: boot with "
				  "systemd.unified_cgroup_hierarchy=1), or drop the limit (see 'aisb doctor' and "
				  "docs/limits.md)", names, why);
		return -EPERM;
	}
	if (n)
		warn[0] = 0;
	if (!l->memory_max && !l->pids_max && !l->cpu_quota_us)
		return 0; /* nothing was asked, nothing to warn about */
	cgroup_format_size(l->memory_max, mem, sizeof(mem));
	if (l->pids_max)
		snprintf(pidsbuf, sizeof(pidsbuf), "%" PRIu64, l->pids_max);
	else
		snprintf(pidsbuf, sizeof(pidsbuf), "max");
	if (!l->pids_max || host_root)
		snprintf(warn, n, "resource limits are not enforced: %s; the memory (%s) and process (%s) "
			 "limits are off for this run%s (run 'aisb doctor' for the fix)", why,
			 l->memory_max ? mem : "max", pidsbuf,
			 host_root && l->pids_max ? ": RLIMIT_NPROC does not bind root" : "");
	else
		snprintf(warn, n, "resource limits are not enforced: %s; the memory limit (%s) and cpu "
			 "accounting are off, processes are capped by RLIMIT_NPROC=%" PRIu64 " only (run "
			 "'aisb doctor' for the fix)", why, l->memory_max ? mem : "max", l->pids_max);
	return 0;
}

int cgroup_systemd_argv(char *const *argv, const char *self_exe, char ***out)
{
	static const char *const pre[] = { "systemd-run", "--user", "--scope", "--quiet",
					   "--collect", "-p", "Delegate=yes", "--" };
	_cleanup_strv_free_ char **v = calloc(1, sizeof(char *));

	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < ELEMENTSOF(pre); i++)
		if (strv_push(&v, pre[i]) < 0)
			return -ENOMEM;
	if (strv_push(&v, self_exe) < 0)
		return -ENOMEM;
	for (size_t i = 1; argv && argv[0] && argv[i]; i++)
		if (strv_push(&v, argv[i]) < 0)
			return -ENOMEM;
	*out = TAKE_PTR(v);
	return 0;
}
