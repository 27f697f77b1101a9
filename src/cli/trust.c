// SPDX-License-Identifier: GPL-2.0-or-later
/* trust.c — reading a project's .aisb policy and the trust records */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "build/context.h"
#include "cli/trust.h"
#include "util/strbuf.h"
#include "util/util.h"

/* One file below the .aisb dir fd: no symlink, regular, bounded. 0 absent, 1 read. */
static int read_policy_file(int dfd, const char *name, char **out)
{
	_cleanup_close_ int fd = openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK);
	char fdpath[64];
	struct stat st;
	int r;

	*out = NULL;
	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	if (st.st_size > TRUST_FILE_MAX)
		return -EFBIG;
	snprintf(fdpath, sizeof(fdpath), "/proc/self/fd/%d", fd);
	r = read_file_at(AT_FDCWD, fdpath, TRUST_FILE_MAX, out, NULL);
	if (r < 0)
		return r;
	/* The content is hostile until trusted, and keys and values end up in messages on the
	 * user's terminal: no control characters (escape sequences), no NUL. */
	for (const unsigned char *c = (const unsigned char *)*out; *c; c++)
		if ((*c < 0x20 && *c != '\n' && *c != '\t' && *c != '\r') || *c == 0x7f)
			return -EILSEQ;
	if (st.st_size > 0 && strlen(*out) != (size_t)st.st_size)
		return -EILSEQ;
	return 1;
}

static int policy_hash(struct project_policy *pp)
{
	_cleanup_free_ char *buf = NULL;
	size_t lc = pp->config ? strlen(pp->config) : 0, la = pp->allow ? strlen(pp->allow) : 0;
	int n;

	/* lengths and presence are part of the hash: no content can be moved between the files */
	n = asprintf(&buf, "aisb-project-policy-v1\nconfig %s%zu\n%s\nallow %s%zu\n%s\n", pp->config ? "" : "-", lc,
		     pp->config ? pp->config : "", pp->allow ? "" : "-", la, pp->allow ? pp->allow : "");
	if (n < 0)
		return -ENOMEM;
	return build_sha256_hex(buf, (size_t)n, pp->hash);
}

int trust_read_policy(const char *dir, struct project_policy *pp)
{
	_cleanup_close_ int dfd = -1;
	int r, k;

	memset(pp, 0, sizeof(*pp));
	pp->root = realpath(dir, NULL);
	if (!pp->root)
		return -errno;
	{
		_cleanup_close_ int pfd = open(pp->root, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (pfd < 0)
			return -errno;
		dfd = openat(pfd, ".aisb", O_PATH | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	}
	if (dfd < 0) {
		if (errno == ENOENT)
			return 0;
		/* a symlinked .aisb could lend the policy of another tree */
		return errno == ENOTDIR || errno == ELOOP ? -ELOOP : -errno;
	}
	r = read_policy_file(dfd, "config", &pp->config);
	if (r < 0)
		return r;
	k = read_policy_file(dfd, "allow", &pp->allow);
	if (k < 0)
		return k;
	if (!pp->config && !pp->allow)
		return 0;
	r = policy_hash(pp);
	return r < 0 ? r : 1;
}

void trust_policy_done(struct project_policy *pp)
{
	free(pp->root);
	free(pp->config);
	free(pp->allow);
	memset(pp, 0, sizeof(*pp));
}

char *trust_policy_text(const struct project_policy *pp)
{
	_cleanup_free_ char *allow = pp->allow ? strdup(pp->allow) : NULL;
	struct strbuf b = { 0 };
	int r = 0;

	if (pp->config)
		r = strbuf_printf(&b, "%s\n", pp->config);
	for (char *line = allow, *next; line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = 0;
		while (*line == ' ' || *line == '\t')
			line++;
		if (!*line || *line == '#')
			continue;
		if (r == 0)
			r = strbuf_printf(&b, "allow = %s\n", line);
	}
	if (r < 0) {
		free(b.p);
		return NULL;
	}
	return b.p ? b.p : strdup("");
}

/* trust/<sha256 of the real path>: "path=...\nsha256=...\n" */
static char *record_path(const char *state_dir, const char *root)
{
	char hex[65], rel[80];

	if (build_sha256_hex(root, strlen(root), hex) < 0)
		return NULL;
	snprintf(rel, sizeof(rel), "trust/%s", hex);
	return path_join(state_dir, rel);
}

/* A record is "path=...\nsha256=...\n", then the trusted policy text (trust_policy_text()), so
 * that --show can say what changed since. Bounded: the text of two 64 KiB files. */
#define RECORD_MAX (1 << 20)

static char *read_record(const char *state_dir, const struct project_policy *pp)
{
	_cleanup_free_ char *path = record_path(state_dir, pp->root);
	char *text = NULL;

	if (!path || read_file_at(AT_FDCWD, path, RECORD_MAX, &text, NULL) < 0)
		return NULL;
	return text;
}

static char *record_head(const struct project_policy *pp)
{
	char *h;
	return asprintf(&h, "path=%s\nsha256=%s\n", pp->root, pp->hash) < 0 ? NULL : h;
}

enum trust_state trust_state_of(const char *state_dir, const struct project_policy *pp)
{
	_cleanup_free_ char *text = NULL, *want = NULL;

	if (!pp->config && !pp->allow)
		return TRUST_NONE;
	text = read_record(state_dir, pp);
	want = record_head(pp);
	if (!text || !want)
		return TRUST_UNTRUSTED;
	if (strncmp(text, want, strlen(want)) == 0)
		return TRUST_TRUSTED;
	/* the record names another path: a hash collision on the name is not a trust */
	return strncmp(text, want, strlen(pp->root) + 6) == 0 ? TRUST_CHANGED : TRUST_UNTRUSTED;
}

char *trust_recorded_text(const char *state_dir, const struct project_policy *pp)
{
	_cleanup_free_ char *text = read_record(state_dir, pp);
	const char *body;

	if (!text || strncmp(text, "path=", 5) != 0 || !(body = strstr(text, "\nsha256=")) ||
	    !(body = strchr(body + 1, '\n')))
		return NULL;
	return strdup(body + 1);
}

char *trust_redact_env(const char *entry)
{
	const char *eq = strchr(entry, '=');
	char hex[65], *out;

	if (!eq)
		return strdup(entry);
	if (build_sha256_hex(eq + 1, strlen(eq + 1), hex) < 0 ||
	    asprintf(&out, "%.*s=<sha256:%.12s>", (int)(eq - entry), entry, hex) < 0)
		return NULL;
	return out;
}

/* @text with every `env = NAME=VALUE` line's value replaced by trust_redact_env()'s form: the
 * record is a new copy on disk, and no value of the environment is ever written by aisb. */
static char *redact_text(const char *text)
{
	_cleanup_free_ char *copy = strdup(text);
	struct strbuf b = { 0 };
	int r = 0;

	if (!copy)
		return NULL;
	for (char *line = copy, *next; line && r == 0; line = next) {
		char *k = line, *eq;

		next = strchr(line, '\n');
		if (next)
			*next++ = 0;
		while (*k == ' ' || *k == '\t')
			k++;
		eq = strchr(k, '=');
		if (eq && strncmp(k, "env", 3) == 0 && strspn(k + 3, " \t") == (size_t)(eq - k - 3)) {
			const char *v = eq + 1 + strspn(eq + 1, " \t");
			_cleanup_free_ char *red = trust_redact_env(v);
			r = red ? strbuf_printf(&b, "env = %s\n", red) : -ENOMEM;
		} else
			r = strbuf_printf(&b, "%s\n", line);
	}
	if (r < 0) {
		free(b.p);
		return NULL;
	}
	return b.p ? b.p : strdup("");
}

int trust_record(const char *state_dir, const struct project_policy *pp, bool revoke)
{
	_cleanup_free_ char *path = record_path(state_dir, pp->root), *dir = path_join(state_dir, "trust");
	_cleanup_free_ char *head = NULL, *body = NULL, *text = NULL, *tmp = NULL;
	int r;

	if (!path || !dir)
		return -ENOMEM;
	if (revoke)
		return unlink(path) < 0 && errno != ENOENT ? -errno : 0;
	r = mkdir_p(dir, 0700);
	if (r < 0)
		return r;
	head = record_head(pp);
	{
		_cleanup_free_ char *plain = trust_policy_text(pp);
		body = plain ? redact_text(plain) : NULL;
	}
	if (!head || !body || asprintf(&text, "%s%s", head, body) < 0 || asprintf(&tmp, "%s.tmp", path) < 0)
		return -ENOMEM;
	(void)unlink(tmp);
	r = write_file_at(AT_FDCWD, tmp, text, strlen(text), 0600);
	if (r < 0)
		return r;
	if (rename(tmp, path) < 0) {
		r = -errno;
		(void)unlink(tmp);
		return r;
	}
	return 0;
}
