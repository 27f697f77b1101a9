// SPDX-License-Identifier: GPL-2.0-or-later
/* gitguard-parse.c — the pure half of gitguard: git config syntax, gitfiles, key list, paths */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "git/gitguard.h"
#include "util/strbuf.h"
#include "util/util.h"

/* ---- config syntax ------------------------------------------------------------------------ */

static void sb_reset(struct strbuf *b)
{
	b->n = 0;
	if (b->p)
		b->p[0] = 0;
}

struct cur {
	const char *p, *end;
};

/* git reads EOF as a newline, so every construct ends at one (config.c get_next_char). */
static int next_char(struct cur *c)
{
	if (c->p >= c->end)
		return -1;
	if (*c->p == '\r' && c->p + 1 < c->end && c->p[1] == '\n')
		c->p++;
	return (unsigned char)*c->p++;
}

static bool is_key_char(int ch)
{
	return ch >= 0 && (isalnum(ch) || ch == '-');
}

/* `[name]`, `[name "sub"]`, `[name.sub]`; the '[' is consumed. */
static int parse_section(struct cur *c, struct strbuf *sec, struct strbuf *sub, bool *has_sub)
{
	int ch;

	sb_reset(sec);
	sb_reset(sub);
	*has_sub = false;
	for (;;) {
		ch = next_char(c);
		if (ch < 0 || ch == '\n')
			return -EINVAL;
		if (ch == ']')
			break;
		if (isspace(ch)) {
			/* extended form: whitespace, a quoted subsection, ']' */
			while ((ch = next_char(c)) >= 0 && isspace(ch) && ch != '\n')
				;
			if (ch != '"')
				return -EINVAL;
			*has_sub = true;
			for (;;) {
				ch = next_char(c);
				if (ch < 0 || ch == '\n')
					return -EINVAL;
				if (ch == '"')
					break;
				if (ch == '\\') {
					ch = next_char(c);
					if (ch < 0 || ch == '\n')
						return -EINVAL;
				}
				if (strbuf_putc(sub, (char)ch) < 0)
					return -ENOMEM;
			}
			if (next_char(c) != ']')
				return -EINVAL;
			break;
		}
		if (!is_key_char(ch) && ch != '.')
			return -EINVAL;
		if (strbuf_putc(sec, (char)tolower(ch)) < 0)
			return -ENOMEM;
	}
	if (!sec->n)
		return -EINVAL;
	if (!*has_sub) {
		/* legacy `[section.subsection]`: git lower-cases the whole thing */
		char *dot = strchr(sec->p, '.');
		if (dot) {
			if (strbuf_puts(sub, dot + 1) < 0)
				return -ENOMEM;
			sec->n = (size_t)(dot - sec->p);
			sec->p[sec->n] = 0;
			*has_sub = true;
		}
	}
	return 0;
}

/* The value after '=' up to the end of the line (config.c parse_value). */
static int parse_value(struct cur *c, struct strbuf *val)
{
	bool quote = false, comment = false;
	size_t space = 0;
	int ch;

	sb_reset(val);
	while ((ch = next_char(c)) >= 0 && ch != '\n' && isspace(ch))
		;
	if (ch < 0 || ch == '\n')
		return 0;
	c->p--;
	for (;;) {
		ch = next_char(c);
		if (ch < 0 || ch == '\n') {
			if (quote)
				return -EINVAL;
			return 0;
		}
		if (comment)
			continue;
		if (isspace(ch) && !quote) {
			if (val->n)
				space++;
			continue;
		}
		if (!quote && (ch == ';' || ch == '#')) {
			comment = true;
			continue;
		}
		for (; space; space--)
			if (strbuf_putc(val, ' ') < 0)
				return -ENOMEM;
		if (ch == '\\') {
			ch = next_char(c);
			switch (ch) {
			case '\n':
				continue;
			case 't':
				ch = '\t';
				break;
			case 'b':
				ch = '\b';
				break;
			case 'n':
				ch = '\n';
				break;
			case '\\':
			case '"':
				break;
			default:
				return -EINVAL;
			}
		} else if (ch == '"') {
			quote = !quote;
			continue;
		}
		if (strbuf_putc(val, (char)ch) < 0)
			return -ENOMEM;
	}
}

int gitguard_config_parse(const char *buf, size_t len, gitguard_key_fn fn, void *userdata)
{
	struct cur c = { buf, buf + len };
	struct strbuf sec = { 0 }, sub = { 0 }, name = { 0 }, val = { 0 };
	bool has_sub = false, in_section = false, comment = false;
	int ch, r = 0;

	if (len >= 3 && memcmp(buf, "\xef\xbb\xbf", 3) == 0)
		c.p += 3;
	while ((ch = next_char(&c)) >= 0) {
		if (ch == '\n') {
			comment = false;
			continue;
		}
		if (comment || isspace(ch))
			continue;
		if (ch == '#' || ch == ';') {
			comment = true;
			continue;
		}
		if (ch == '[') {
			if ((r = parse_section(&c, &sec, &sub, &has_sub)) < 0)
				goto out;
			in_section = true;
			continue;
		}
		if (!isalpha(ch) || !in_section) {
			r = -EINVAL;
			goto out;
		}
		sb_reset(&name);
		do {
			if (strbuf_putc(&name, (char)tolower(ch)) < 0) {
				r = -ENOMEM;
				goto out;
			}
		} while (is_key_char(ch = next_char(&c)));
		while (ch >= 0 && ch != '\n' && isspace(ch))
			ch = next_char(&c);
		if (ch < 0 || ch == '\n')
			r = fn(sec.p, has_sub ? (sub.p ? sub.p : "") : NULL, name.p, NULL, userdata);
		else if (ch != '=') {
			r = -EINVAL;
			goto out;
		} else if ((r = parse_value(&c, &val)) == 0)
			r = fn(sec.p, has_sub ? (sub.p ? sub.p : "") : NULL, name.p, val.p ? val.p : "", userdata);
		if (r < 0)
			goto out;
	}
out:
	free(sec.p);
	free(sub.p);
	free(name.p);
	free(val.p);
	return r < 0 ? r : 0;
}

/* ---- the keys that run commands or move config ----------------------------------------- */

enum sub_rule { SUB_NONE, SUB_ANY, SUB_EITHER };

static const struct command_key {
	const char *section;
	enum sub_rule sub;
	const char *name; /* NULL: any name */
	const char *why;
} command_keys[] = {
	{ "core", SUB_NONE, "fsmonitor", "runs a command on every git status" },
	{ "core", SUB_NONE, "hookspath", "takes hooks from another directory" },
	{ "core", SUB_NONE, "sshcommand", "runs a command for ssh" },
	{ "core", SUB_NONE, "gitproxy", "runs a command for the git protocol" },
	{ "core", SUB_NONE, "pager", "runs a pager command" },
	{ "core", SUB_NONE, "editor", "runs an editor command" },
	{ "core", SUB_NONE, "askpass", "runs a password command" },
	{ "core", SUB_NONE, "alternaterefscommand", "runs a command for alternates" },
	{ "core", SUB_NONE, "attributesfile", "takes attributes (filter and diff drivers) from another file" },
	{ "core", SUB_NONE, "worktree", "moves the work tree elsewhere" },
	{ "extensions", SUB_NONE, "worktreeconfig", "makes git read config.worktree" },
	{ "sequence", SUB_NONE, "editor", "runs an editor command" },
	{ "pager", SUB_NONE, NULL, "runs a pager command" },
	{ "alias", SUB_NONE, NULL, "an alias can run any command or set any key" },
	{ "diff", SUB_NONE, "external", "runs an external diff command" },
	{ "diff", SUB_ANY, "textconv", "runs a textconv command" },
	{ "diff", SUB_ANY, "command", "runs a diff driver command" },
	{ "difftool", SUB_ANY, "cmd", "runs a difftool command" },
	{ "difftool", SUB_ANY, "path", "runs a difftool program" },
	{ "mergetool", SUB_ANY, "cmd", "runs a mergetool command" },
	{ "mergetool", SUB_ANY, "path", "runs a mergetool program" },
	{ "filter", SUB_ANY, "clean", "runs a clean filter" },
	{ "filter", SUB_ANY, "smudge", "runs a smudge filter" },
	{ "filter", SUB_ANY, "process", "runs a filter process" },
	{ "merge", SUB_ANY, "driver", "runs a merge driver" },
	{ "credential", SUB_EITHER, "helper", "runs a credential helper" },
	{ "gpg", SUB_EITHER, NULL, "runs a signing program" },
	{ "include", SUB_NONE, "path", "includes another config file" },
	{ "includeif", SUB_ANY, "path", "includes another config file" },
	{ "remote", SUB_ANY, "uploadpack", "runs an upload-pack command" },
	{ "remote", SUB_ANY, "receivepack", "runs a receive-pack command" },
	{ "remote", SUB_ANY, "vcs", "runs a remote helper" },
	{ "protocol", SUB_EITHER, "allow", "enables transports that run commands (ext::)" },
	{ "uploadpack", SUB_NONE, "packobjectshook", "runs a pack-objects hook" },
	{ "submodule", SUB_ANY, "update", "can run a command on submodule update" },
	{ "interactive", SUB_NONE, "difffilter", "runs a diff filter command" },
	{ "browser", SUB_ANY, "cmd", "runs a browser command" },
	{ "browser", SUB_ANY, "path", "runs a browser program" },
	{ "man", SUB_ANY, "cmd", "runs a man viewer command" },
	{ "man", SUB_ANY, "path", "runs a man viewer program" },
	{ "sendemail", SUB_EITHER, "smtpserver", "can name a sendmail program" },
	{ "sendemail", SUB_EITHER, "tocmd", "runs a command" },
	{ "sendemail", SUB_EITHER, "cccmd", "runs a command" },
	{ "sendemail", SUB_EITHER, "headercmd", "runs a command" },
	{ "sendemail", SUB_EITHER, "sendmailcmd", "runs a command" },
	{ "imap", SUB_NONE, "tunnel", "runs a tunnel command" },
	{ "tar", SUB_ANY, "command", "runs an archive filter command" },
	{ "trailer", SUB_ANY, "command", "runs a trailer command" },
	{ "trailer", SUB_ANY, "cmd", "runs a trailer command" },
	{ "guitool", SUB_ANY, "cmd", "runs a gui tool command" },
	{ "instaweb", SUB_NONE, NULL, "runs a web server" },
	{ "hook", SUB_ANY, NULL, "defines a hook command" },
};

const char *gitguard_key_is_command(const char *section, const char *subsection, const char *name)
{
	for (size_t i = 0; i < ELEMENTSOF(command_keys); i++) {
		const struct command_key *k = &command_keys[i];
		if (!streq(k->section, section))
			continue;
		if ((k->sub == SUB_NONE && subsection) || (k->sub == SUB_ANY && !subsection))
			continue;
		if (k->name && !streq(k->name, name))
			continue;
		return k->why;
	}
	return NULL;
}

struct first_cmd {
	char *key;
	size_t keylen;
	bool found;
};

static int first_cmd_fn(const char *section, const char *subsection, const char *name, const char *value,
			void *userdata)
{
	struct first_cmd *fc = userdata;
	(void)value;
	if (fc->found || !gitguard_key_is_command(section, subsection, name))
		return 0;
	fc->found = true;
	if (fc->keylen)
		snprintf(fc->key, fc->keylen, "%s%s%s.%s", section, subsection ? "." : "",
			 subsection ? subsection : "", name);
	return 0;
}

int gitguard_config_first_command(const char *buf, size_t len, char *key, size_t keylen)
{
	struct first_cmd fc = { key, keylen, false };
	int r;
	if (keylen)
		key[0] = 0;
	r = gitguard_config_parse(buf, len, first_cmd_fn, &fc);
	if (fc.found)
		return 1; /* git reads keys before a syntax error, then dies */
	return r < 0 ? -EINVAL : 0;
}

/* ---- gitfiles and paths ------------------------------------------------------------------ */

int gitguard_parse_gitfile(const char *buf, size_t len, const char *prefix, char **out)
{
	size_t pl = prefix ? strlen(prefix) : 0, n;
	const char *s = buf, *nl;

	*out = NULL;
	if (len < pl || (pl && memcmp(buf, prefix, pl) != 0))
		return -EINVAL;
	s += pl;
	len -= pl;
	while (pl && len && (*s == ' ' || *s == '\t')) {
		s++;
		len--;
	}
	nl = memchr(s, '\n', len);
	n = nl ? (size_t)(nl - s) : len;
	while (n && isspace((unsigned char)s[n - 1]))
		n--;
	if (!n || memchr(s, 0, n))
		return -EINVAL;
	*out = strndup(s, n);
	return *out ? 0 : -ENOMEM;
}

int gitguard_path_below(const char *root, const char *base, const char *path, char **out)
{
	_cleanup_free_ char *full = NULL;
	_cleanup_strv_free_ char **parts = NULL;
	struct strbuf sb = { 0 };
	char *save = NULL, *comp;
	size_t rl = strlen(root);

	*out = NULL;
	if (path_is_absolute(path)) {
		if (!path_startswith(path, root))
			return -EXDEV;
		full = strdup(path + rl);
	} else if (asprintf(&full, "%s/%s", base, path) < 0)
		full = NULL;
	if (!full)
		return -ENOMEM;
	/* lexical: "." dropped, ".." pops; popping above the root leaves it */
	for (comp = strtok_r(full, "/", &save); comp; comp = strtok_r(NULL, "/", &save)) {
		if (streq(comp, "."))
			continue;
		if (streq(comp, "..")) {
			size_t n;
			if (!parts || !parts[0]) /* nothing left to pop: above the root */
				return -EXDEV;
			n = strv_length(parts);
			free(parts[n - 1]);
			parts[n - 1] = NULL;
			continue;
		}
		if (strv_push(&parts, comp) < 0)
			return -ENOMEM;
	}
	for (size_t i = 0; parts && parts[i]; i++)
		if ((i && strbuf_putc(&sb, '/') < 0) || strbuf_puts(&sb, parts[i]) < 0) {
			free(sb.p);
			return -ENOMEM;
		}
	*out = sb.p ? sb.p : strdup("");
	return *out ? 0 : -ENOMEM;
}
