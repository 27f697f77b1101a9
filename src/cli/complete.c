// SPDX-License-Identifier: GPL-2.0-or-later
/* complete.c — completion candidates from the flag tables (see complete.h) */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/complete.h"
#include "cli/hostenv.h"
#include "cli/sessions.h"
#include "rootfs/image.h"
#include "util/log.h"
#include "util/util.h"
#include "workspace/workspace.h"

static bool has_prefix(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* Finds --@name (@len bytes) or -@short in @c's flags. Does not log. */
static bool find_flag(const struct cli_command *c, const char *name, size_t len, char short_name,
		      struct cli_flag *out)
{
	struct cli_flag f;

	for (size_t i = 0; cli_command_flag(c, i, &f); i++)
		if ((short_name && f.short_name == short_name) ||
		    (!short_name && strlen(f.name) == len && strncmp(f.name, name, len) == 0)) {
			*out = f;
			return true;
		}
	return false;
}

/* Adds @prefix@word to @out when it starts with @cur. */
static int offer(char ***out, const char *prefix, const char *word, const char *cur)
{
	_cleanup_free_ char *w = NULL;

	if (asprintf(&w, "%s%s", prefix, word) < 0)
		return -ENOMEM;
	if (!has_prefix(w, cur))
		return 0;
	return strv_push(out, w);
}

static int offer_strv(char ***out, const char *prefix, char **words, const char *cur)
{
	int r = 0;

	for (size_t i = 0; words && words[i] && r >= 0; i++)
		r = offer(out, prefix, words[i], cur);
	strv_free(words);
	return r;
}

/* The flags of @c: "--name" for all, "-x" too when @cur is "-" (the short spelling is typed, not
 * discovered, once a second '-' is there). */
static int offer_flags(char ***out, const struct cli_command *c, const char *cur)
{
	struct cli_flag f;
	int r = 0;

	for (size_t i = 0; r >= 0 && cli_command_flag(c, i, &f); i++) {
		char s[3] = { '-', f.short_name, 0 };
		r = offer(out, "--", f.name, cur);
		if (r >= 0 && f.short_name && streq(cur, "-"))
			r = strv_push(out, s);
	}
	return r;
}

/* A value of kind @f for the word @cur, which starts with @prefix ("--net=" or "") that is kept
 * on every candidate. @allow_files are the --allow-file values seen on the line. */
static int offer_value(char ***out, const struct cli_flag *f, const struct cli_command *c, const char *prefix,
		       const char *cur, char **allow_files, const struct complete_env *env)
{
	int r = 0;

	switch (f->value) {
	case CLI_VALUE_CHOICE: {
		_cleanup_free_ char *copy = strdup(f->choices);
		if (!copy)
			return -ENOMEM;
		for (char *w = copy, *next; w && r >= 0; w = next) {
			next = strchr(w, ' ');
			if (next)
				*next++ = 0;
			r = offer(out, prefix, w, cur);
		}
		return r;
	}
	case CLI_VALUE_DIR:
		return strv_push(out, ":dirs");
	case CLI_VALUE_FILE:
		return strv_push(out, ":files");
	case CLI_VALUE_ENV:
		return strv_push(out, ":env");
	case CLI_VALUE_IMAGE:
		return offer_strv(out, prefix, env->images(env->data), cur);
	case CLI_VALUE_SESSION:
		r = offer_strv(out, prefix, env->sessions(env->data), cur);
		/* inspect also takes an image when no session has the id */
		if (r >= 0 && streq(c->name, "inspect"))
			r = offer_strv(out, prefix, env->images(env->data), cur);
		return r;
	case CLI_VALUE_ALLOW:
		for (size_t i = 0; allow_files && allow_files[i] && r >= 0; i++)
			r = offer_strv(out, prefix, env->allow_file(env->data, allow_files[i]), cur);
		if (r >= 0)
			r = offer_strv(out, prefix, env->allow_file(env->data, ".aisb/allow"), cur);
		return r;
	default:
		return 0; /* free text: nothing to offer */
	}
}

int complete_words(char *const *words, size_t n, const struct complete_env *env, char ***out)
{
	const struct cli_command *run = cli_command_find("run"), *c = run;
	_cleanup_strv_free_ char **allow_files = NULL;
	const char *cur = words[n - 1];
	struct cli_flag f;
	size_t i = 0;
	int r = 0;

	*out = calloc(1, sizeof(char *));
	if (!*out)
		return -ENOMEM;
	if (n == 1 && !(has_prefix(cur, "--") && strchr(cur, '='))) {
		/* the first word: a subcommand, or one of run's flags (run is the default) */
		if (*cur != '-')
			for (const struct cli_command *k = cli_commands; k->name && r >= 0; k++)
				r = offer(out, "", k->name, cur);
		if (r >= 0 && (!*cur || *cur == '-'))
			r = offer_flags(out, run, cur);
		return r < 0 ? -ENOMEM : 0;
	}
	if (cli_command_find(words[0])) {
		c = cli_command_find(words[0]);
		i = 1;
	}

	/* Walk the finished words the way the subcommand's parser would. */
	for (; i < n - 1; i++) {
		const char *a = words[i], *eq;

		if (streq(a, "--"))
			return 0; /* run: the command's words; others: operands. Nothing to offer. */
		if (has_prefix(a, "--")) {
			eq = strchr(a, '=');
			if (!find_flag(c, a + 2, eq ? (size_t)(eq - a - 2) : strlen(a + 2), 0, &f)) {
				if (c == run)
					return 0; /* an unknown flag is the first harness argument */
				continue;
			}
		} else if (a[0] == '-' && a[1] && c != run) {
			if (!find_flag(c, "", 0, a[1], &f) || a[2])
				continue; /* unknown, or "-fFILE" */
			eq = NULL;
		} else {
			if (c == run)
				return 0; /* a positional word (or "-x"): the harness's from here on */
			continue;
		}
		if (f.value == CLI_VALUE_NONE || f.optional_value || eq) {
			if (eq && streq(f.name, "allow-file") && strv_push(&allow_files, eq + 1) < 0)
				return -ENOMEM;
			continue;
		}
		/* the flag takes the next word */
		if (i + 1 == n - 1)
			return offer_value(out, &f, c, "", cur, allow_files, env) < 0 ? -ENOMEM : 0;
		if (streq(f.name, "allow-file") && strv_push(&allow_files, words[i + 1]) < 0)
			return -ENOMEM;
		i++;
	}

	if (has_prefix(cur, "--") && strchr(cur, '=')) {
		const char *eq = strchr(cur, '=');
		_cleanup_free_ char *prefix = strndup(cur, (size_t)(eq - cur) + 1);
		if (!prefix)
			return -ENOMEM;
		if (!find_flag(c, cur + 2, (size_t)(eq - cur - 2), 0, &f) || f.value == CLI_VALUE_NONE)
			return 0;
		r = offer_value(out, &f, c, prefix, cur, allow_files, env);
	} else if (*cur == '-' || (!*cur && (c == run || c->positional == CLI_VALUE_NONE))) {
		r = offer_flags(out, c, cur);
	} else if (c != run) {
		f = (struct cli_flag){ .name = "", .value = c->positional };
		r = offer_value(out, &f, c, "", cur, allow_files, env);
	}
	return r < 0 ? -ENOMEM : 0;
}

/* The live state of this host, read only. */

static char **host_images(void *data)
{
	struct image_opts o;
	struct store *s = NULL;
	struct store_ref *refs = NULL;
	char **v = calloc(1, sizeof(char *));
	size_t n = 0;

	if (!v || image_opts_init(&o, hostenv_get) < 0)
		return v;
	/* store_open() creates a missing store; completion must not write, so look first */
	if (o.store_root && faccessat(AT_FDCWD, o.store_root, F_OK, AT_EACCESS) == 0 &&
	    store_open(o.store_root, &s) == 0 && store_ref_list(s, &refs, &n) == 0)
		for (size_t i = 0; i < n; i++) {
			/* internal build-cache entries are not names anyone types */
			if (!cli_is_build_cache(refs[i].name))
				(void)strv_push(&v, refs[i].name);
			store_ref_done(&refs[i]);
		}
	free(refs);
	store_free(s);
	image_opts_done(&o);
	return v;
}

static char **host_sessions(void *data)
{
	_cleanup_free_ char *dir = sessions_state_dir(hostenv_get);
	struct session_info *v = NULL;
	char **ids = calloc(1, sizeof(char *));
	size_t n = 0;

	if (!ids || !dir || sessions_list(dir, &v, &n) < 0)
		return ids;
	for (size_t i = 0; i < n; i++)
		(void)strv_push(&ids, v[i].id);
	sessions_list_free(v, n);
	/* a clone workspace outlives its session dir (aisb import ID, aisb inspect ID) */
	{
		_cleanup_strv_free_ char **ws = workspace_ids(dir);
		for (size_t i = 0; ws && ws[i]; i++)
			if (!strv_contains(ids, ws[i]))
				(void)strv_push(&ids, ws[i]);
	}
	return ids;
}

static char **host_allow_file(void *data, const char *path)
{
	_cleanup_free_ char *text = NULL;
	char **v = calloc(1, sizeof(char *));

	if (!v || read_file_at(AT_FDCWD, path, 1 << 20, &text, NULL) < 0)
		return v;
	for (char *line = text, *next; line; line = next) {
		char *end;
		next = strchr(line, '\n');
		if (next)
			*next++ = 0;
		line += strspn(line, " \t");
		end = line + strcspn(line, " \t#\r");
		*end = 0;
		if (*line)
			(void)strv_push(&v, line);
	}
	return v;
}

int cmd_complete(int argc, char **argv)
{
	const struct complete_env env = { host_images, host_sessions, host_allow_file, NULL };
	char *empty[] = { (char *)"", NULL };
	_cleanup_strv_free_ char **out = NULL;

	/* the shell discards stderr; a broken store must not print into the command line */
	log_set_level(LOG_LVL_ERROR);
	if (complete_words(argc > 1 ? argv + 1 : empty, argc > 1 ? (size_t)argc - 1 : 1, &env, &out) < 0)
		return AISB_EXIT_FAILED;
	for (size_t i = 0; out[i]; i++)
		printf("%s\n", out[i]);
	return 0;
}
