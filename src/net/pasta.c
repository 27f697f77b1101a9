// SPDX-License-Identifier: GPL-2.0-or-later
/* pasta.c — pasta option detection, argv, start with readiness wait, stop */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "util/hostenv.h"
#include "net/addr.h"
#include "net/pasta.h"
#include "util/container.h"
#include "util/log.h"
#include "util/spawn.h"
#include "util/util.h"

static bool has_opt(const char *text, const char *opt)
{
	size_t n = strlen(opt);

	for (const char *p = strstr(text, opt); p; p = strstr(p + 1, opt)) {
		char after = p[n];

		if ((p == text || p[-1] == ' ' || p[-1] == '\t' || p[-1] == '\n' || p[-1] == ',') &&
		    (after == ' ' || after == '\t' || after == '\n' || after == ',' || after == '\0'))
			return true;
	}
	return false;
}

/**
 * pasta_parse_help() - which options this pasta offers, from its --help text
 * @text: the help output (syslog noise lines included; they are ignored)
 * @o: result
 *
 * Return: 0, or -ENOEXEC when the text is not pasta's help. Does not log.
 */
int pasta_parse_help(const char *text, struct pasta_opts *o)
{
	memset(o, 0, sizeof(*o));
	if (!strstr(text, "pasta"))
		return -ENOEXEC;
	o->no_map_gw = has_opt(text, "--no-map-gw");
	o->map_host_loopback = has_opt(text, "--map-host-loopback");
	o->config_net = has_opt(text, "--config-net");
	o->tcp_ns = has_opt(text, "--tcp-ns");
	o->quiet = has_opt(text, "--quiet");
	o->foreground = has_opt(text, "--foreground");
	o->ipv4_only = has_opt(text, "--ipv4-only");
	o->runas = has_opt(text, "--runas");
	o->dns_forward = has_opt(text, "--dns-forward");
	return 0;
}

/**
 * pasta_parse_publish() - parse `--publish [ADDR:]HOSTPORT:PORT`
 * @spec: text; ADDR may be an IPv4 address or a bracketed IPv6 address
 * @out: result (ADDR defaults to 127.0.0.1)
 *
 * Return: 0, or -EINVAL. Logs on failure.
 */
int pasta_parse_publish(const char *spec, struct pasta_publish *out)
{
	char buf[128], *last, *mid;
	unsigned long long hp, p;
	struct net_addr a;

	memset(out, 0, sizeof(*out));
	if (strlen(spec) >= sizeof(buf))
		goto bad;
	memcpy(buf, spec, strlen(spec) + 1);
	last = strrchr(buf, ':');
	if (!last)
		goto bad;
	*last++ = '\0';
	mid = strrchr(buf, ':');
	if (mid && (!strchr(buf, ']') || mid > strchr(buf, ']')))
		*mid++ = '\0';
	else
		mid = NULL;
	if (mid) {
		char *addr = buf;
		size_t l = strlen(addr);

		if (addr[0] == '[' && l > 2 && addr[l - 1] == ']') {
			addr[l - 1] = '\0';
			addr++;
		}
		if (addr_parse(addr, &a) < 0)
			goto bad;
		addr_format(&a, out->addr, sizeof(out->addr));
	} else {
		snprintf(out->addr, sizeof(out->addr), "127.0.0.1");
		mid = buf;
	}
	if (strlen(mid) > 5 || strlen(last) > 5 || parse_u64(mid, &hp) < 0 || parse_u64(last, &p) < 0 || !hp ||
	    !p || hp > 65535 || p > 65535)
		goto bad;
	out->host_port = (uint16_t)hp;
	out->port = (uint16_t)p;
	return 0;
bad:
	return log_error_errno(-EINVAL, "invalid --publish '%s' (use [ADDR:]HOSTPORT:PORT)", spec);
}

/**
 * pasta_build_argv() - the pasta command line for @s
 * @o: detected options
 * @s: what to attach to and publish
 * @argv: result (strv)
 *
 * A forward to a reserved port (the gate's listeners) is refused here too, whatever the plan
 * said: the plan refuses such a --publish with 78, this is the second wall at the exec.
 * Return: 0, -ENOTSUP when a required option is missing, -EPERM for a reserved port, -ENOMEM.
 * Does not log.
 */
int pasta_build_argv(const struct pasta_opts *o, const struct pasta_spec *s, char ***argv)
{
	_cleanup_strv_free_ char **v = NULL;
	char buf[128];

	for (size_t i = 0; i < s->n_publish; i++)
		for (size_t k = 0; k < s->n_reserved; k++)
			if (s->publish[i].port == s->reserved[k])
				return -EPERM;

	if (!o->config_net || !o->tcp_ns || !o->foreground)
		return -ENOTSUP;
	if (strv_push(&v, "pasta") < 0 || strv_push(&v, "--foreground") < 0 || strv_push(&v, "--config-net") < 0)
		return -ENOMEM;
	if (o->quiet && strv_push(&v, "--quiet") < 0)
		return -ENOMEM;
	if (o->runas) {
		snprintf(buf, sizeof(buf), "%u:%u", (unsigned)s->uid, (unsigned)s->gid);
		if (strv_push(&v, "--runas") < 0 || strv_push(&v, buf) < 0)
			return -ENOMEM;
	}
	/* Nothing of the host's loopback from inside: no -T/-U forwards, no gateway mapping. */
	if (strv_push(&v, "-T") < 0 || strv_push(&v, "none") < 0 || strv_push(&v, "-U") < 0 ||
	    strv_push(&v, "none") < 0 || strv_push(&v, "-u") < 0 || strv_push(&v, "none") < 0)
		return -ENOMEM;
	if (!s->map_host_loopback) {
		if (!o->no_map_gw)
			return -ENOTSUP;
		if (strv_push(&v, "--no-map-gw") < 0)
			return -ENOMEM;
	} else if (o->map_host_loopback) {
		if (strv_push(&v, "--map-host-loopback") < 0)
			return -ENOMEM;
	}
	if (!s->ipv6 && o->ipv4_only && strv_push(&v, "--ipv4-only") < 0)
		return -ENOMEM;
	if (s->dns_forward && o->dns_forward &&
	    (strv_push(&v, "--dns-forward") < 0 || strv_push(&v, PASTA_DNS_FORWARD) < 0))
		return -ENOMEM;
	if (s->n_publish == 0) {
		if (strv_push(&v, "-t") < 0 || strv_push(&v, "none") < 0)
			return -ENOMEM;
	}
	for (size_t i = 0; i < s->n_publish; i++) {
		snprintf(buf, sizeof(buf), "%s/%u:%u", s->publish[i].addr, s->publish[i].host_port, s->publish[i].port);
		if (strv_push(&v, "-t") < 0 || strv_push(&v, buf) < 0)
			return -ENOMEM;
	}
	snprintf(buf, sizeof(buf), "%d", (int)s->pid);
	if (strv_push(&v, buf) < 0)
		return -ENOMEM;
	*argv = TAKE_PTR(v);
	return 0;
}

/**
 * pasta_find() - the pasta binary on the host's PATH
 * @path: result (malloc'd)
 *
 * Return: 0, or -ENOENT. Does not log.
 */
int pasta_find(char **path)
{
	const char *env = hostenv_get("PATH");
	_cleanup_free_ char *copy = strdup(env && *env ? env : "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin");
	char *dir, *next;

	if (!copy)
		return -ENOMEM;
	for (dir = copy; dir; dir = next) {
		_cleanup_free_ char *p = NULL;

		next = strchr(dir, ':');
		if (next)
			*next++ = '\0';
		if (!path_is_absolute(dir))
			continue; /* an empty or relative PATH entry is never searched */
		p = path_join(dir, "pasta");
		if (p && access(p, X_OK) == 0) {
			*path = TAKE_PTR(p);
			return 0;
		}
	}
	return -ENOENT;
}

static int run_capture(const char *path, char *const argv[], char *buf, size_t size)
{
	int fds[2], r;
	pid_t pid;
	size_t n = 0;

	if (pipe2(fds, O_CLOEXEC) < 0)
		return -errno;
	const struct spawn_fd map[] = { { fds[1], 1 }, { fds[1], 2 } };
	const struct spawn_opts so = { .path = path, .argv = argv, .fds = map, .n_fds = ELEMENTSOF(map) };

	r = spawn(&so, &pid);
	close(fds[1]);
	if (r < 0) {
		close(fds[0]);
		return r;
	}
	for (;;) {
		ssize_t k = read(fds[0], buf + n, size - 1 - n);

		if (k <= 0 || (n += (size_t)k) >= size - 1)
			break;
	}
	buf[n] = '\0';
	close(fds[0]);
	(void)spawn_wait(pid);
	return 0;
}

/**
 * pasta_detect() - run `pasta --help` and parse it
 * @path: the binary
 * @o: result
 *
 * Return: 0, or -errno. Logs on failure.
 */
int pasta_detect(const char *path, struct pasta_opts *o)
{
	char *const argv[] = { (char *)"pasta", (char *)"--help", NULL };
	_cleanup_free_ char *buf = malloc(65536);
	int r;

	if (!buf)
		return log_error_errno(-ENOMEM, "out of memory");
	r = run_capture(path, argv, buf, 65536);
	if (r < 0)
		return log_error_errno(r, "cannot run '%s --help': %m", path);
	r = pasta_parse_help(buf, o);
	if (r < 0)
		return log_error_errno(r, "'%s --help' does not look like pasta's (package %s)", path, PASTA_PACKAGE);
	return 0;
}

/* pasta has configured the namespace when init's netns shows a default route. */
static int has_default_route(pid_t pid)
{
	char path[64], buf[4096];
	_cleanup_close_ int fd = -1;
	ssize_t k;

	snprintf(path, sizeof(path), "/proc/%d/net/route", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	k = read(fd, buf, sizeof(buf) - 1);
	if (k <= 0)
		return 0;
	buf[k] = '\0';
	/* a line whose Destination column is 00000000 */
	for (char *l = strchr(buf, '\n'); l && l[1]; l = strchr(l + 1, '\n')) {
		char *tab = strchr(l + 1, '\t');

		if (tab && strncmp(tab + 1, "00000000\t", 9) == 0)
			return 1;
	}
	return 0;
}

/* The last line pasta wrote to @log_fd (a regular file opened for append) that is not its
 * syslog noise ("Failed to send N bytes to syslog", measured), into @buf; "" if none. */
static void pasta_error_line(int log_fd, char *buf, size_t n)
{
	_cleanup_free_ char *text = NULL;
	char path[64];

	buf[0] = 0;
	if (log_fd < 0)
		return;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", log_fd);
	if (read_file_at(AT_FDCWD, path, (size_t)64 * 1024, &text, NULL) < 0)
		return;
	for (char *line = text, *next; line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = 0;
		if (*line && !strstr(line, "syslog"))
			snprintf(buf, n, "%s", line);
	}
}

/**
 * pasta_start() - exec pasta attached to the sandbox and wait until it configured the netns
 * @path: the binary
 * @o: its detected options
 * @s: attach/publish spec
 * @log_fd: pasta's stdout/stderr (its syslog noise goes there), or -1 for /dev/null
 * @out: the running pasta
 *
 * Return: 0, or -errno (-ENODEV: pasta could not open /dev/net/tun). Logs on failure.
 */
int pasta_start(const char *path, const struct pasta_opts *o, const struct pasta_spec *s, int log_fd,
		struct pasta *out)
{
	_cleanup_strv_free_ char **argv = NULL;
	struct timespec start, now;
	pid_t pid;
	int r, st;

	out->pid = -1;
	r = pasta_build_argv(o, s, &argv);
	if (r == -ENOTSUP)
		return log_error_errno(r, "this pasta lacks --config-net, --tcp-ns or --no-map-gw; install a newer "
				       "'%s' package", PASTA_PACKAGE);
	if (r == -EPERM)
		return log_error_errno(r, "refusing to forward a host port to one of the gate's own ports");
	if (r < 0)
		return log_error_errno(r, "out of memory");
	{
		const int log = log_fd >= 0 ? log_fd : SPAWN_DEVNULL;
		const struct spawn_fd fds[] = { { SPAWN_DEVNULL, 0 }, { log, 1 }, { log, 2 } };
		/* pasta must not outlive a killed supervisor either (forked before any gate thread, so
		 * the parent that dies is the supervisor's main thread) */
		const struct spawn_opts so = {
			.path = path, .argv = argv, .fds = fds, .n_fds = ELEMENTSOF(fds), .pdeathsig = SIGKILL
		};

		if ((r = spawn(&so, &pid)) < 0)
			return log_error_errno(r, "cannot start pasta '%s': %m", path);
	}
	out->pid = pid;
	clock_gettime(CLOCK_MONOTONIC, &start);
	for (;;) {
		if (waitpid(pid, &st, WNOHANG) == pid) {
			char line[256], how[32];
			out->pid = -1;
			if (WIFEXITED(st))
				snprintf(how, sizeof(how), "exit %d", WEXITSTATUS(st));
			else
				snprintf(how, sizeof(how), "signal %d", WIFSIGNALED(st) ? WTERMSIG(st) : 0);
			pasta_error_line(log_fd, line, sizeof(line));
			if (!*line)
				return log_error_errno(-ECHILD, "pasta exited before it configured the sandbox's "
						       "network (%s; see pasta.log in the session dir with --keep)", how);
			/* without /dev/net/tun (a container's default) pasta says "Failed to open tun
			 * socket" (measured): the fix is the engine's --device option */
			if (strstr(line, "tun"))
				return log_error_errno(-ENODEV, "pasta failed (%s): '%s'; fix: %s", how, line,
						       container_fix(container_detect(NULL), CONTAINER_NEED_TUN));
			return log_error_errno(-ECHILD, "pasta failed (%s): '%s'", how, line);
		}
		r = has_default_route(s->pid);
		if (r > 0)
			return 0;
		clock_gettime(CLOCK_MONOTONIC, &now);
		if ((now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000 > 5000) {
			pasta_stop(out);
			return log_error_errno(-ETIMEDOUT, "pasta did not configure the sandbox's network within 5 s");
		}
		usleep(2000);
	}
}

/**
 * pasta_stop() - kill and reap pasta (it does not exit when the namespace empties)
 * @p: pasta; its pid becomes -1
 *
 * Does not log.
 */
void pasta_stop(struct pasta *p)
{
	int st;

	if (!p || p->pid <= 0)
		return;
	kill(p->pid, SIGTERM);
	for (int i = 0; i < 200; i++) {
		pid_t w = waitpid(p->pid, &st, WNOHANG);

		if (w == p->pid || (w < 0 && errno == ECHILD))
			goto done;
		usleep(5000);
	}
	kill(p->pid, SIGKILL);
	while (waitpid(p->pid, &st, 0) < 0 && errno == EINTR)
		;
done:
	p->pid = -1;
}
