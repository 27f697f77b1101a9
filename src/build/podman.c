// SPDX-License-Identifier: GPL-2.0-or-later
/* podman.c — run podman build/save/inspect as child programs */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "build/podman.h"
#include "net/gate.h"
#include "util/log.h"
#include "util/spawn.h"
#include "util/util.h"

char *podman_find_program(const char *path, const char *name)
{
	const char *p = path;

	while (p && *p) {
		const char *e = strchrnul(p, ':');
		_cleanup_free_ char *dir = strndup(p, (size_t)(e - p));
		char *full;
		struct stat st;

		if (!dir)
			return NULL;
		if (dir[0] == '/') { /* relative PATH entries are ignored: they depend on the cwd */
			full = path_join(dir, name);
			if (full && stat(full, &st) == 0 && S_ISREG(st.st_mode) && access(full, X_OK) == 0)
				return full;
			free(full);
		}
		p = *e ? e + 1 : e;
	}
	return NULL;
}

int podman_init(struct podman *p, const char *path)
{
	_cleanup_free_ char *runc = NULL;

	*p = (struct podman){ 0 };
	p->exe = podman_find_program(path, "podman");
	if (!p->exe)
		return -ENOENT;
	/* Not a pure cgroup v2 host: podman's crun refuses rootless containers on hybrid cgroups;
	 * runc works (measured, docs/build.md). */
	runc = podman_find_program(path, "runc");
	p->runtime_runc = runc && access("/sys/fs/cgroup/cgroup.controllers", F_OK) < 0;
	return 0;
}

void podman_done(struct podman *p)
{
	free(p->exe);
	p->exe = NULL;
}

/* Runs @argv; stdout goes to @out_fd (or our stderr when -1), stdin is /dev/null.
 * Return: the exit status (>= 0, 128 + a signal), or -errno when it could not be run. */
static int run(char *const *argv, int out_fd)
{
	const struct spawn_fd fds[] = { { SPAWN_DEVNULL, STDIN_FILENO },
					{ out_fd >= 0 ? out_fd : STDERR_FILENO, STDOUT_FILENO } };
	const struct spawn_opts o = { .argv = argv, .fds = fds, .n_fds = ELEMENTSOF(fds) };
	pid_t pid;
	int r = spawn(&o, &pid);

	return r < 0 ? r : spawn_wait(pid);
}

static int push_all(char ***v, char *const *items, const char *flag)
{
	for (size_t i = 0; items && items[i]; i++) {
		int r = strv_push(v, flag);
		if (r >= 0)
			r = strv_push(v, items[i]);
		if (r < 0)
			return r;
	}
	return 0;
}

int podman_base_digest(const struct podman *p, const char *ref, char **digest)
{
	char *exists[] = { p->exe, (char *)"image", (char *)"exists", (char *)ref, NULL };
	char *pull[] = { p->exe, (char *)"pull", (char *)ref, NULL };
	char *inspect[] = { p->exe, (char *)"image", (char *)"inspect", (char *)"--format", (char *)"{{.Digest}}",
			    (char *)ref, NULL };
	char buf[256];
	int pfd[2], r;
	ssize_t n;

	r = run(exists, -1);
	if (r < 0)
		return log_error_errno(r, "Failed to run podman: %m");
	if (r != 0) {
		r = run(pull, -1);
		if (r != 0)
			return log_error_errno(r < 0 ? r : -ECHILD, "podman pull '%s' failed (exit %d)", ref, r);
	}
	if (pipe2(pfd, O_CLOEXEC) < 0)
		return log_error_errno(-errno, "pipe: %m");
	r = run(inspect, pfd[1]);
	close(pfd[1]);
	n = read_full(pfd[0], buf, sizeof(buf) - 1);
	close(pfd[0]);
	if (r != 0)
		return log_error_errno(r < 0 ? r : -ECHILD, "podman image inspect '%s' failed (exit %d)", ref, r);
	if (n < 0)
		return log_error_errno((int)n, "Failed to read podman's answer: %m");
	buf[n] = 0;
	buf[strcspn(buf, "\r\n")] = 0;
	if (strncmp(buf, "sha256:", 7) != 0 || strlen(buf) != 71 || strspn(buf + 7, "0123456789abcdef") != 64)
		return log_error_errno(-EBADMSG, "podman gave no digest for '%s'", ref);
	*digest = strdup(buf);
	return *digest ? 0 : log_error_errno(-ENOMEM, "%m");
}

/* --network=ns:@netns and the gate's resolver and proxy (see podman_build()). Return: 0 or
 * -ENOMEM. Does not log. */
static int gated_args(char ***argv, const char *netns)
{
	static const char *const proxy[] = { "http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY" };
	char *v;
	int r;

	if (asprintf(&v, "--network=ns:%s", netns) < 0 || strv_push_take(argv, v) < 0)
		return -ENOMEM;
	r = strv_push(argv, "--dns=" GATE_DNS_ADDR);
	if (r >= 0)
		r = strv_push(argv, "--http-proxy=false");
	for (size_t i = 0; r >= 0 && i < ELEMENTSOF(proxy); i++) {
		r = strv_push(argv, "--build-arg");
		if (r >= 0 && asprintf(&v, "%s=http://127.0.0.1:%d", proxy[i], GATE_PROXY_PORT) < 0)
			r = -ENOMEM;
		else if (r >= 0)
			r = strv_push_take(argv, v);
	}
	if (r >= 0)
		r = strv_push(argv, "--build-arg");
	if (r >= 0)
		r = strv_push(argv, "no_proxy=localhost,127.0.0.1");
	return r;
}

int podman_build(const struct podman *p, const char *file, const char *context, const char *image,
		 char *const *build_args, char *const *labels, int *status)
{
	_cleanup_strv_free_ char **argv = NULL;
	int r;

	*status = 0;
	r = strv_push(&argv, p->exe);
	if (r >= 0)
		r = strv_push(&argv, "build");
	if (r >= 0 && p->runtime_runc) {
		r = strv_push(&argv, "--runtime");
		if (r >= 0)
			r = strv_push(&argv, "runc");
	}
	if (r >= 0 && p->no_network)
		r = strv_push(&argv, "--network=none");
	if (r >= 0 && p->netns)
		r = gated_args(&argv, p->netns);
	/* the base was resolved (and hashed into the tag) just before: build on exactly that */
	if (r >= 0)
		r = strv_push(&argv, "--pull=never");
	if (r >= 0)
		r = strv_push(&argv, "-f");
	if (r >= 0)
		r = strv_push(&argv, file);
	if (r >= 0)
		r = strv_push(&argv, "-t");
	if (r >= 0)
		r = strv_push(&argv, image);
	if (r >= 0)
		r = push_all(&argv, labels, "--label");
	if (r >= 0)
		r = push_all(&argv, build_args, "--build-arg");
	if (r >= 0)
		r = strv_push(&argv, context);
	if (r < 0)
		return log_error_errno(r, "%m");
	r = run(argv, -1);
	if (r < 0)
		return log_error_errno(r, "Failed to run podman: %m");
	if (r != 0) {
		*status = r;
		return log_error_errno(-ECHILD, "podman build failed (exit %d); nothing was imported", r);
	}
	return 0;
}

int podman_save(const struct podman *p, const char *image, const char *archive)
{
	char *argv[] = { p->exe, (char *)"save", (char *)"--format", (char *)"oci-archive", (char *)"-o",
			 (char *)archive, (char *)image, NULL };
	int r = run(argv, -1);

	if (r < 0)
		return log_error_errno(r, "Failed to run podman: %m");
	if (r != 0)
		return log_error_errno(-ECHILD, "podman save failed (exit %d)", r);
	return 0;
}
