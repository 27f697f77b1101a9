// SPDX-License-Identifier: GPL-2.0-or-later
/* gitrun.c — hardened host git: fixed options, clean environment, argv only, bounded output,
 * redacted messages, the identity read as text */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "git/gitguard.h"
#include "git/gitrun.h"
#include "util/log.h"
#include "util/spawn.h"
#include "util/strbuf.h"
#include "util/util.h"

/* Options before the subcommand. Each names what it switches off; the list is the contract
 * docs/workspace.md repeats. */
static const char *const hardening[] = {
	"--no-pager",
	"-c", "core.hooksPath=/dev/null",      /* no hook runs (pre-commit, post-checkout, ...) */
	"-c", "core.fsmonitor=false",          /* no fsmonitor command */
	"-c", "core.pager=cat",
	"-c", "core.askPass=",                 /* no askpass program */
	"-c", "credential.helper=",            /* resets the helper list: no credential helper */
	"-c", "gc.auto=0",                     /* no auto-gc ... */
	"-c", "maintenance.auto=0",            /* ... and no auto-maintenance after a command */
	"-c", "protocol.allow=never",          /* no transport but those transport_*[] allow */
	"-c", "protocol.ext.allow=never",      /* never ext:: (runs a command) */
	"-c", "commit.gpgSign=false",          /* nothing is signed: no gpg program runs */
	"-c", "tag.gpgSign=false",
	"-c", "push.gpgSign=false",
	"-c", "log.showSignature=false",
	"-c", "submodule.recurse=false",
	"-c", "fetch.recurseSubmodules=false",
	"-c", "push.recurseSubmodules=no",
	"-c", "safe.bareRepository=explicit",  /* an embedded bare repository is never entered */
	"-c", "transfer.fsckObjects=true",     /* what is fetched is checked */
	"-c", "fetch.fsckObjects=true",
	"-c", "init.templateDir=",             /* no template hooks copied into a new repo */
	"-c", "core.untrackedCache=false",
	"-c", "advice.detachedHead=false",
};

/* The transports of a call (after protocol.allow=never): local paths only, and no ssh program
 * at all ... */
static const char *const transport_local[] = {
	"-c", "protocol.file.allow=always",
	"-c", "core.sshCommand=false",
};

/* ... or, for a .remote call (autophase's push to the user's remote), git's own known-safe
 * list, explicitly: every remote helper (foo::URL) and ext:: stay refused. */
static const char *const transport_remote[] = {
	"-c", "protocol.file.allow=always",
	"-c", "protocol.ssh.allow=always",
	"-c", "protocol.https.allow=always",
	"-c", "protocol.http.allow=always",
	"-c", "protocol.git.allow=always",
};

/* The whole environment of a hardened git: nothing inherited. */
static const char *const base_env[] = {
	"PATH=/usr/bin:/bin",
	"LC_ALL=C",
	"HOME=/nonexistent",
	"GIT_CONFIG_NOSYSTEM=1",
	"GIT_CONFIG_GLOBAL=/dev/null",
	"GIT_TERMINAL_PROMPT=0",
	"GIT_OPTIONAL_LOCKS=0",
	"GIT_NO_REPLACE_OBJECTS=1",
	"GIT_NO_LAZY_FETCH=1",
	"GIT_ATTR_NOSYSTEM=1",
	"GIT_PROTOCOL_FROM_USER=0",
	"GIT_ADVICE=0",
	"GIT_PAGER=cat",
	"PAGER=cat",
	"GIT_EDITOR=false",          /* nothing may wait for an editor */
	"GIT_ASKPASS=",              /* set but empty: no askpass program at all (git's prompt.c) */
	"SSH_ASKPASS_REQUIRE=never",
};

static size_t copy_list(const char *const *from, size_t n, const char **to, size_t max)
{
	size_t k = 0;
	for (size_t i = 0; i < n && k + 1 < max; i++)
		to[k++] = from[i];
	to[k] = NULL;
	return k;
}

size_t gitrun_hardening_args(const char **argv, size_t max)
{
	return copy_list(hardening, ELEMENTSOF(hardening), argv, max);
}

size_t gitrun_transport_args(bool remote, const char **argv, size_t max)
{
	return remote ? copy_list(transport_remote, ELEMENTSOF(transport_remote), argv, max)
		      : copy_list(transport_local, ELEMENTSOF(transport_local), argv, max);
}

size_t gitrun_base_env(const char **env, size_t max)
{
	return copy_list(base_env, ELEMENTSOF(base_env), env, max);
}

/* The length of the valid UTF-8 sequence at @p (2 to 4), 0 when it is not one (a stray
 * continuation byte, an overlong form, a surrogate, past U+10FFFF, cut short). */
static size_t utf8_seq(const unsigned char *p)
{
	size_t n = p[0] >= 0xc2 && p[0] <= 0xdf ? 2 : p[0] >= 0xe0 && p[0] <= 0xef ? 3 : p[0] >= 0xf0 && p[0] <= 0xf4 ? 4 : 0;

	for (size_t i = 1; i < n; i++)
		if ((p[i] & 0xc0) != 0x80)
			return 0;
	if ((p[0] == 0xe0 && p[1] < 0xa0) || (p[0] == 0xed && p[1] > 0x9f) || (p[0] == 0xf0 && p[1] < 0x90) ||
	    (p[0] == 0xf4 && p[1] > 0x8f))
		return 0;
	return n;
}

/* In place, same length: C0 controls (but '\n' when @keep_nl) and DEL, the C1 controls both as
 * single bytes (0x80-0x9f: CSI is 0x9b to a terminal in an 8-bit mode) and UTF-8-encoded
 * (U+0080-U+009F, 0xc2 0x80-0x9f), and every byte of invalid UTF-8 become '?'. Valid UTF-8 stays. */
static void sanitize(char *s, bool keep_nl)
{
	unsigned char *p = (unsigned char *)s;

	while (p && *p) {
		size_t n;
		if (*p < 0x80) {
			if ((*p < 0x20 && !(keep_nl && *p == '\n')) || *p == 0x7f)
				*p = '?';
			p++;
			continue;
		}
		n = utf8_seq(p);
		if (n == 0 || (p[0] == 0xc2 && p[1] < 0xa0)) {
			/* one byte of it: the rest is judged on its own */
			*p++ = '?';
			continue;
		}
		p += n;
	}
}

void gitrun_sanitize(char *s)
{
	sanitize(s, false);
}

bool gitrun_is_oid(const char *s)
{
	size_t n = s ? strlen(s) : 0;
	if (n != 40 && n != 64)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

/* Appends to a bounded buffer; past @max the rest is dropped and *over set. */
static int buf_add(char **b, size_t *len, size_t *cap, const char *s, size_t n, size_t max, bool *over)
{
	if (*len + n > max) {
		*over = true;
		n = *len < max ? max - *len : 0;
	}
	if (!*b || *len + n + 1 > *cap) {
		size_t c = (*cap ? *cap * 2 : 4096);
		while (c < *len + n + 1)
			c *= 2;
		char *nb = realloc(*b, c);
		if (!nb)
			return -ENOMEM;
		*b = nb;
		*cap = c;
	}
	memcpy(*b + *len, s, n);
	*len += n;
	(*b)[*len] = 0;
	return 0;
}

/* Builds "NAME=VALUE" into a strv. */
static int env_push(char ***v, const char *name, const char *value)
{
	char *e;
	if (asprintf(&e, "%s=%s", name, value) < 0)
		return -ENOMEM;
	return strv_push_take(v, e);
}

/* Whether @entry (NAME=VALUE) sets a name of the base environment (which wins) or a GIT_
 * variable (which could point git at other config, objects or programs). Pure. */
static bool user_env_refused(const char *entry)
{
	size_t n = strcspn(entry, "=");

	if (!entry[n] || n == 0 || strncmp(entry, "GIT_", 4) == 0 || strncmp(entry, "HOME=", 5) == 0 ||
	    strncmp(entry, "XDG_CONFIG_HOME=", 16) == 0)
		return true;
	for (size_t i = 0; i < ELEMENTSOF(base_env); i++)
		if (strncmp(base_env[i], entry, n + 1) == 0)
			return strncmp(entry, "PATH=", 5) != 0; /* PATH: the caller's, for a credential helper */
	return false;
}

static int build_env(const struct gitrun *g, const struct gitrun_call *c, char ***out)
{
	bool user = c->remote && c->user_config;
	bool user_path = false;
	char **v = NULL;
	int r = 0;

	for (size_t i = 0; user && g->user_env && g->user_env[i]; i++)
		if (strncmp(g->user_env[i], "PATH=", 5) == 0)
			user_path = true;
	for (size_t i = 0; i < ELEMENTSOF(base_env) && r >= 0; i++) {
		if (c->remote && g->home && strncmp(base_env[i], "HOME=", 5) == 0)
			continue;
		if (user && (streq(base_env[i], "GIT_CONFIG_GLOBAL=/dev/null") ||
			     (user_path && strncmp(base_env[i], "PATH=", 5) == 0)))
			continue;
		r = strv_push(&v, base_env[i]);
	}
	for (size_t i = 0; user && g->user_env && g->user_env[i] && r >= 0; i++)
		if (!user_env_refused(g->user_env[i]))
			r = strv_push(&v, g->user_env[i]);
	if (r >= 0 && user && g->xdg_config)
		r = env_push(&v, "XDG_CONFIG_HOME", g->xdg_config);
	/* a push over ssh: ssh reads ~/.ssh (keys, known_hosts) and may use the agent; git's
	 * global config stays off (GIT_CONFIG_GLOBAL) */
	if (r >= 0 && c->remote && g->home)
		r = env_push(&v, "HOME", g->home);
	if (r >= 0 && c->remote && g->ssh_auth_sock)
		r = env_push(&v, "SSH_AUTH_SOCK", g->ssh_auth_sock);
	if (r >= 0 && c->ident && g->name && g->email) {
		if ((r = env_push(&v, "GIT_AUTHOR_NAME", g->name)) >= 0 &&
		    (r = env_push(&v, "GIT_AUTHOR_EMAIL", g->email)) >= 0 &&
		    (r = env_push(&v, "GIT_COMMITTER_NAME", g->name)) >= 0)
			r = env_push(&v, "GIT_COMMITTER_EMAIL", g->email);
	}
	for (size_t i = 0; c->env && c->env[i] && r >= 0; i++)
		r = strv_push(&v, c->env[i]);
	if (r < 0) {
		strv_free(v);
		return -ENOMEM;
	}
	*out = v;
	return 0;
}

static int build_argv(const struct gitrun *g, const struct gitrun_call *c, char ***out)
{
	char **v = NULL;
	int r = strv_push(&v, g->git);

	const char *tr[16];
	size_t nt = gitrun_transport_args(c->remote, tr, ELEMENTSOF(tr));

	for (size_t i = 0; i < ELEMENTSOF(hardening) && r >= 0; i++) {
		/* the user's own credential helpers answer a push that reads the user's config */
		if (c->remote && c->user_config && streq(hardening[i], "-c") && i + 1 < ELEMENTSOF(hardening) &&
		    streq(hardening[i + 1], "credential.helper=")) {
			i++;
			continue;
		}
		r = strv_push(&v, hardening[i]);
	}
	for (size_t i = 0; i < nt && r >= 0; i++)
		r = strv_push(&v, tr[i]);
	if (r >= 0 && g->excludes) {
		char *e;
		if (asprintf(&e, "core.excludesFile=%s", g->excludes) < 0 || strv_push(&v, "-c") < 0 ||
		    strv_push_take(&v, e) < 0)
			r = -ENOMEM;
	}
	if (r >= 0 && c->dir && g->bare && streq(c->dir, g->bare)) {
		char *e;
		r = asprintf(&e, "--git-dir=%s", c->dir) < 0 ? -ENOMEM : strv_push_take(&v, e);
	} else if (r >= 0 && c->dir && (r = strv_push(&v, "-C")) >= 0)
		r = strv_push(&v, c->dir);
	/* vcall() with no words leaves args NULL */
	for (size_t i = 0; r >= 0 && c->args && c->args[i]; i++)
		r = strv_push(&v, c->args[i]);
	if (r < 0) {
		strv_free(v);
		return -ENOMEM;
	}
	*out = v;
	return 0;
}

/* The caller's and the child's ends of one call's pipes, and what came back on them. */
struct call_io {
	int in[2], out[2], err[2];
	char *errb;
	size_t out_cap, err_len, err_cap, in_off;
	bool over, err_over;
};

static void call_io_close(struct call_io *io)
{
	for (int i = 0; i < 2; i++) {
		if (io->in[i] >= 0)
			close(io->in[i]);
		if (io->out[i] >= 0)
			close(io->out[i]);
		if (io->err[i] >= 0)
			close(io->err[i]);
		io->in[i] = io->out[i] = io->err[i] = -1;
	}
}

/* Starts git: stdin from @c->in_fd or a pipe, stdout and stderr to pipes, nothing else open,
 * argv and no shell, an empty signal mask and SIGINT, SIGQUIT, SIGPIPE at their defaults (the
 * caller may block or ignore them). Return: 0 or -errno. Does not log. */
static int call_start(char **argv, char **env, const struct gitrun_call *c, struct call_io *io, pid_t *pid)
{
	int r;

	if ((c->in_fd < 0 && pipe2(io->in, O_CLOEXEC) < 0) || pipe2(io->out, O_CLOEXEC) < 0 ||
	    pipe2(io->err, O_CLOEXEC) < 0)
		return -errno;
	{
		const struct spawn_fd fds[] = { { c->in_fd >= 0 ? c->in_fd : io->in[0], 0 }, { io->out[1], 1 },
						{ io->err[1], 2 } };
		const struct spawn_opts o = {
			.argv = argv,
			.envp = env,
			.fds = fds,
			.n_fds = ELEMENTSOF(fds),
			.close_others = true,
			.reset_sigmask = true,
			.sig_default = SPAWN_SIG(SIGINT) | SPAWN_SIG(SIGQUIT) | SPAWN_SIG(SIGPIPE),
		};

		if ((r = spawn(&o, pid)) < 0)
			return r;
	}
	if (io->in[0] >= 0)
		close(io->in[0]);
	close(io->out[1]);
	close(io->err[1]);
	io->in[0] = io->out[1] = io->err[1] = -1;
	if (io->in[1] >= 0 && (!c->in || !c->in_len)) {
		close(io->in[1]);
		io->in[1] = -1;
	}
	if (io->in[1] >= 0)
		fcntl(io->in[1], F_SETFL, O_NONBLOCK);
	return 0;
}

/* stdin can take more: the next part of @c->in; the pipe is closed when all is written or it
 * failed. */
static void call_feed(struct gitrun_call *c, struct call_io *io)
{
	ssize_t k = write(io->in[1], c->in + io->in_off, c->in_len - io->in_off);

	if (k > 0)
		io->in_off += (size_t)k;
	if ((k < 0 && errno != EAGAIN && errno != EINTR) || io->in_off == c->in_len) {
		close(io->in[1]);
		io->in[1] = -1;
	}
}

/* stdout (@is_err false) or stderr has data: stdout read into @c->out (bounded by
 * GITRUN_OUT_MAX, io->over past it), stderr into io->errb (its head kept); the pipe is closed at
 * its end or on a failure. */
static void call_drain(struct gitrun_call *c, struct call_io *io, bool is_err)
{
	int *fd = is_err ? &io->err[0] : &io->out[0];
	char buf[65536];
	ssize_t k = read(*fd, buf, sizeof(buf));

	if (k > 0 && is_err)
		(void)buf_add(&io->errb, &io->err_len, &io->err_cap, buf, (size_t)k, GITRUN_ERR_MAX - 1, &io->err_over);
	else if (k > 0) {
		if (buf_add(&c->out, &c->out_len, &io->out_cap, buf, (size_t)k, GITRUN_OUT_MAX, &io->over) < 0)
			io->over = true;
	} else if (k == 0 || (errno != EINTR && errno != EAGAIN)) {
		close(*fd);
		*fd = -1;
	}
}

/* Until git closed stdout and stderr: feeds it @c->in and collects both (poll, no threads). */
static void call_pump(struct gitrun_call *c, struct call_io *io)
{
	while (io->out[0] >= 0 || io->err[0] >= 0) {
		struct pollfd pf[3];
		int n = 0, o = -1, ie = -1, ii = -1;

		if (io->out[0] >= 0)
			pf[o = n++] = (struct pollfd){ io->out[0], POLLIN, 0 };
		if (io->err[0] >= 0)
			pf[ie = n++] = (struct pollfd){ io->err[0], POLLIN, 0 };
		if (io->in[1] >= 0)
			pf[ii = n++] = (struct pollfd){ io->in[1], POLLOUT, 0 };
		if (poll(pf, (nfds_t)n, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (ii >= 0 && pf[ii].revents)
			call_feed(c, io);
		if (o >= 0 && pf[o].revents)
			call_drain(c, io, false);
		if (ie >= 0 && pf[ie].revents)
			call_drain(c, io, true);
	}
}

int gitrun_call(const struct gitrun *g, struct gitrun_call *c)
{
	_cleanup_strv_free_ char **argv = NULL, **env = NULL;
	struct call_io io = { .in = { -1, -1 }, .out = { -1, -1 }, .err = { -1, -1 } };
	int st, r;
	pid_t pid = -1;

	c->out = NULL;
	c->out_len = 0;
	c->err[0] = 0;
	if ((r = build_argv(g, c, &argv)) < 0 || (r = build_env(g, c, &env)) < 0)
		return r;
	if ((r = call_start(argv, env, c, &io, &pid)) < 0) {
		call_io_close(&io);
		return r;
	}
	call_pump(c, &io);
	call_io_close(&io);
	st = spawn_wait(pid);
	if (st < 0) {
		free(io.errb);
		return st;
	}
	if (io.errb)
		snprintf(c->err, sizeof(c->err), "%s", io.errb);
	free(io.errb);
	if (!c->out && buf_add(&c->out, &c->out_len, &io.out_cap, "", 0, 1, &io.over) < 0)
		return -ENOMEM;
	if (io.over)
		return -E2BIG;
	return st;
}

void gitrun_call_done(struct gitrun_call *c)
{
	free(c->out);
	c->out = NULL;
}

static int vcall(const struct gitrun *g, const char *dir, struct gitrun_call *c, va_list ap)
{
	_cleanup_strv_free_ char **args = NULL;
	const char *a;

	while ((a = va_arg(ap, const char *)))
		if (strv_push(&args, a) < 0)
			return -ENOMEM;
	c->dir = dir;
	c->args = (const char *const *)args;
	c->in_fd = -1;
	return gitrun_call(g, c);
}

int gitrun_line(const struct gitrun *g, const char *dir, char **out, ...)
{
	struct gitrun_call c = { .in_fd = -1 };
	va_list ap;
	char *nl;
	int r;

	va_start(ap, out);
	r = vcall(g, dir, &c, ap);
	va_end(ap);
	if (r != 0) {
		gitrun_call_done(&c);
		return r;
	}
	nl = strchr(c.out, '\n');
	if (nl)
		*nl = 0;
	*out = TAKE_PTR(c.out);
	return 0;
}

/* The first line of git's stderr, for a message (gitrun_message()): malloc'd or NULL. */
static char *first_line(const char *err)
{
	char *m = gitrun_message(err), *nl = m ? strchr(m, '\n') : NULL;
	if (nl)
		*nl = 0;
	return m;
}

int gitrun_ok(const struct gitrun *g, const char *dir, const char *what, ...)
{
	struct gitrun_call c = { .in_fd = -1 };
	va_list ap;
	int r;

	va_start(ap, what);
	r = vcall(g, dir, &c, ap);
	va_end(ap);
	gitrun_call_done(&c);
	if (r < 0)
		return log_error_errno(r, "%s: cannot run git: %m", what), -EIO;
	if (r > 0) {
		_cleanup_free_ char *m = first_line(c.err);
		return log_error("%s: git failed (%d): %s", what, r, m && *m ? m : "no message"), -EIO;
	}
	return 0;
}

/* End of a URL's authority: where user info can no longer be. */
static bool ends_authority(char c)
{
	return c == 0 || c == '/' || c == '?' || c == '#' || c == '\'' || c == '"' || c == '`' ||
	       isspace((unsigned char)c) || c == '<' || c == '>';
}

/* For "://" at @s: the length of the user info to hide after it (up to its last '@'), 0: none. */
static size_t userinfo_len(const char *s)
{
	size_t at = 0;
	for (size_t i = 0; !ends_authority(s[i]); i++)
		if (s[i] == '@')
			at = i + 1;
	return at ? at - 1 : 0;
}

bool gitrun_has_credentials(const char *text)
{
	for (const char *p = strstr(text, "://"); p; p = strstr(p + 3, "://"))
		if (userinfo_len(p + 3) > 0)
			return true;
	return false;
}

char *gitrun_redact(const char *text)
{
	struct strbuf b = { 0 };
	const char *p = text;

	for (const char *s = strstr(p, "://"); s; s = strstr(p, "://")) {
		size_t n = userinfo_len(s + 3);
		if (strbuf_put(&b, p, (size_t)(s + 3 - p)) < 0)
			goto oom;
		p = s + 3;
		if (n == 0)
			continue;
		if (strbuf_puts(&b, "<redacted>") < 0)
			goto oom;
		p += n;
	}
	if (strbuf_puts(&b, p) < 0)
		goto oom;
	return b.p ? b.p : strdup("");
oom:
	free(b.p);
	return NULL;
}

char *gitrun_message(const char *text)
{
	char *m = gitrun_redact(text ? text : "");

	sanitize(m, true);
	return m;
}

/* The keys gitrun_read_user() looks up, in the files' order; the first file that sets one wins,
 * within it the last line. */
struct config_scan {
	const char *const *keys; /* "section.name", lower case */
	char **val;              /* per key: this file's value */
	size_t n;
};

static int scan_fn(const char *section, const char *subsection, const char *key, const char *value, void *ud)
{
	struct config_scan *s = ud;

	if (subsection || !value)
		return 0;
	for (size_t i = 0; i < s->n; i++) {
		const char *dot = strchr(s->keys[i], '.');
		if (strlen(section) != (size_t)(dot - s->keys[i]) || strncasecmp(section, s->keys[i], (size_t)(dot - s->keys[i])) != 0 ||
		    strcasecmp(key, dot + 1) != 0)
			continue;
		free(s->val[i]); /* the last one in a file wins, as in git */
		if (!(s->val[i] = strdup(value)))
			return -ENOMEM;
	}
	return 0;
}

/* The first value of each of @keys (n of them) across @files; @out[i] NULL when none sets it.
 * Return: 0 or -errno (the values freed). */
static int config_lookup(const char *const *files, const char *const *keys, char **out, size_t n)
{
	char *val[4] = { 0 };
	int r = 0;

	if (n > ELEMENTSOF(val))
		return -EINVAL;
	for (size_t i = 0; i < n; i++)
		out[i] = NULL;
	for (size_t f = 0; files && files[f] && r >= 0; f++) {
		_cleanup_free_ char *text = NULL;
		struct config_scan s = { keys, val, n };
		size_t len = 0;
		r = read_file_at(AT_FDCWD, files[f], GITGUARD_MAX_CONFIG, &text, &len);
		if (r == -ENOENT || r == -ENOTDIR) {
			r = 0;
			continue;
		}
		if (r >= 0)
			r = gitguard_config_parse(text, len, scan_fn, &s);
		for (size_t i = 0; i < n; i++) {
			if (r >= 0 && !out[i])
				out[i] = TAKE_PTR(val[i]);
			free(val[i]);
			val[i] = NULL;
		}
	}
	if (r < 0)
		for (size_t i = 0; i < n; i++) {
			free(out[i]);
			out[i] = NULL;
		}
	return r < 0 ? r : 0;
}

int gitrun_identity(const char *const *files, char **name, char **email)
{
	static const char *const keys[] = { "user.name", "user.email" };
	char *v[2];
	int r = config_lookup(files, keys, v, 2);

	*name = v[0];
	*email = v[1];
	return r;
}

static char *dup_opt(const char *s)
{
	return s && *s ? strdup(s) : NULL;
}

int gitrun_setup(struct gitrun *g, const struct gitrun_user *u)
{
	static const char *const candidates[] = { "/usr/bin/git", "/usr/local/bin/git", "/bin/git" };

	memset(g, 0, sizeof(*g));
	for (size_t i = 0; i < ELEMENTSOF(candidates) && !g->git[0]; i++)
		if (access(candidates[i], X_OK) == 0)
			snprintf(g->git, sizeof(g->git), "%s", candidates[i]);
	if (!g->git[0])
		return log_error("aisb needs git on the host (/usr/bin/git, /usr/local/bin/git or /bin/git): install the "
				 "git package"),
		       -ENOENT;
	if (u->home && path_is_absolute(u->home) && !(g->home = strdup(u->home)))
		return -ENOMEM;
	if (u->xdg_config && path_is_absolute(u->xdg_config) && !(g->xdg_config = strdup(u->xdg_config)))
		return -ENOMEM;
	if ((u->env_name && *u->env_name && !(g->env_name = dup_opt(u->env_name))) ||
	    (u->env_email && *u->env_email && !(g->env_email = dup_opt(u->env_email))) ||
	    (u->ssh_auth_sock && *u->ssh_auth_sock && !(g->ssh_auth_sock = dup_opt(u->ssh_auth_sock))))
		return -ENOMEM;
	for (size_t i = 0; u->user_env && u->user_env[i]; i++)
		if (strv_push(&g->user_env, u->user_env[i]) < 0)
			return -ENOMEM;
	return 0;
}

int gitrun_read_user(struct gitrun *g, const char *commondir, unsigned what)
{
	static const char *const keys[] = { "user.name", "user.email", "core.excludesFile" };
	_cleanup_free_ char *local = commondir ? path_join(commondir, "config") : NULL;
	_cleanup_free_ char *global = g->home ? path_join(g->home, ".gitconfig") : NULL;
	_cleanup_free_ char *xdgdir = g->xdg_config ? strdup(g->xdg_config) : g->home ? path_join(g->home, ".config") : NULL;
	_cleanup_free_ char *xdg = xdgdir ? path_join(xdgdir, "git/config") : NULL;
	const char *files[4];
	char *v[3];
	size_t n = 0;
	int r;

	if ((commondir && !local) || (g->home && !global) || (xdgdir && !xdg))
		return -ENOMEM;
	if (local)
		files[n++] = local;
	if (global)
		files[n++] = global;
	if (xdg)
		files[n++] = xdg;
	files[n] = NULL;
	if ((r = config_lookup(files, keys, v, 3)) < 0)
		return r;
	free(g->name);
	free(g->email);
	free(g->excludes);
	g->name = g->email = g->excludes = NULL;
	/* the environment first, as git itself takes it */
	if (what & GITRUN_IDENT) {
		g->name = g->env_name ? strdup(g->env_name) : TAKE_PTR(v[0]);
		g->email = g->env_email ? strdup(g->env_email) : TAKE_PTR(v[1]);
	}
	if (what & GITRUN_EXCLUDES)
		g->excludes = TAKE_PTR(v[2]);
	free(v[0]);
	free(v[1]);
	free(v[2]);
	if ((what & GITRUN_EXCLUDES) && !g->excludes && xdgdir) {
		/* git's default when the key is unset */
		_cleanup_free_ char *f = path_join(xdgdir, "git/ignore");
		if (f && access(f, R_OK) == 0)
			g->excludes = TAKE_PTR(f);
	}
	if (g->excludes && g->excludes[0] == '~' && g->excludes[1] == '/' && g->home) {
		char *e = path_join(g->home, g->excludes + 2);
		free(g->excludes);
		g->excludes = e;
	}
	if ((what & GITRUN_IDENT) && (!g->name || !g->email))
		return -ENODATA;
	return 0;
}

int gitrun_init(struct gitrun *g, const char *repo, unsigned what, const char *(*get)(const char *))
{
	const struct gitrun_user u = {
		.home = get("HOME"),
		.xdg_config = get("XDG_CONFIG_HOME"),
		.env_name = get("GIT_AUTHOR_NAME"),
		.env_email = get("GIT_AUTHOR_EMAIL"),
	};
	_cleanup_free_ char *commondir = NULL;
	int r = gitrun_setup(g, &u);

	if (r < 0 || !what)
		return r;
	/* the repository's own config (a query: it executes nothing); not a repository: none */
	if (repo && gitrun_line(g, repo, &commondir, "rev-parse", "--path-format=absolute", "--git-common-dir",
				(char *)NULL) != 0)
		commondir = NULL;
	r = gitrun_read_user(g, commondir, what);
	if (r == -ENODATA)
		return log_error("importing commits needs your git identity, and none is set: git config --global "
				 "user.name 'Your Name' && git config --global user.email you@example.com "
				 "(includes are not followed), or export GIT_AUTHOR_NAME and GIT_AUTHOR_EMAIL"),
		       -EINVAL;
	if (r < 0)
		return log_error_errno(r, "cannot read the git identity from the config files: %m"), r;
	return 0;
}

void gitrun_done(struct gitrun *g)
{
	free(g->name);
	free(g->email);
	free(g->excludes);
	free(g->home);
	free(g->xdg_config);
	free(g->env_name);
	free(g->env_email);
	free(g->ssh_auth_sock);
	strv_free(g->user_env);
	memset(g, 0, sizeof(*g));
}
