// SPDX-License-Identifier: GPL-2.0-or-later
/* autophase-plan.c — phase names, launcher words, commit subjects, delivered phases (pure) */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "agents/harness.h"
#include "git/gitrun.h"
#include "pipeline/autophase-internal.h"
#include "util/strbuf.h"
#include "util/util.h"

bool autophase_phase_name(const char *file, char *name)
{
	size_t n = strlen(file), i = 0;

	if (n < 6 || n - 3 > AUTOPHASE_MAX_NAME || strcmp(file + n - 3, ".md") != 0)
		return false;
	while (i < n - 3 && isdigit((unsigned char)file[i]))
		i++;
	if (i == 0 || file[i] != '-' || i + 1 >= n - 3)
		return false;
	for (i++; i < n - 3; i++)
		if (!(isalnum((unsigned char)file[i]) || file[i] == '.' || file[i] == '_' || file[i] == '-'))
			return false;
	memcpy(name, file, n - 3);
	name[n - 3] = 0;
	return true;
}

int autophase_split_launcher(const char *cmd, char ***out)
{
	_cleanup_strv_free_ char **v = NULL;
	const char *p = cmd;

	*out = NULL;
	for (const char *c = cmd; *c; c++)
		if ((unsigned char)*c < 0x20 && *c != '\t')
			return -EINVAL;
	for (;;) {
		const char *e;
		while (*p == ' ' || *p == '\t')
			p++;
		if (!*p)
			break;
		for (e = p; *e && *e != ' ' && *e != '\t'; e++)
			;
		if (strv_length(v) >= AUTOPHASE_MAX_WORDS)
			return -E2BIG;
		{
			char *w = strndup(p, (size_t)(e - p));
			if (!w || strv_push_take(&v, w) < 0)
				return -ENOMEM;
		}
		p = e;
	}
	if (!v)
		return -EINVAL;
	*out = TAKE_PTR(v);
	return 0;
}

bool autophase_is_harness(const char *prog)
{
	return harness_find(prog) != NULL;
}

char *autophase_title(const char *name, const char *text, size_t len)
{
	struct strbuf b = { 0 };
	const char *p = text, *end = text + len;

	while (p && p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *le = nl ? nl : end;
		if (le - p > 2 && p[0] == '#' && p[1] == ' ') {
			size_t kept = 0;
			if (strbuf_printf(&b, "%s: ", name) < 0)
				goto oom;
			for (const char *c = p + 2; c < le && kept < 72; c++)
				if ((unsigned char)*c >= 0x20 && *c != 0x7f) {
					if (strbuf_putc(&b, *c) < 0)
						goto oom;
					kept++;
				}
			/* no half UTF-8 sequence at the cut */
			while (b.n > 0 && ((unsigned char)b.p[b.n - 1] & 0xc0) == 0x80 && kept == 72)
				b.p[--b.n] = 0;
			if (b.n > 0 && ((unsigned char)b.p[b.n - 1] & 0xc0) == 0xc0)
				b.p[--b.n] = 0;
			while (b.n > 0 && b.p[b.n - 1] == ' ')
				b.p[--b.n] = 0;
			return b.p;
		}
		p = nl ? nl + 1 : NULL;
	}
	return strdup(name);
oom:
	free(b.p);
	return NULL;
}

int autophase_parse_history(const char *log, char *const *names, size_t n, char **commits)
{
	for (size_t i = 0; i < n; i++)
		commits[i] = NULL;
	for (const char *line = log; line && *line;) {
		const char *nl = strchr(line, '\n');
		const char *le = nl ? nl : line + strlen(line);
		const char *tab = memchr(line, '\t', (size_t)(le - line));
		if (tab) {
			/* the values, comma-separated (one commit may carry several) */
			for (const char *v = tab + 1; v < le;) {
				const char *ve = memchr(v, ',', (size_t)(le - v));
				size_t vl;
				if (!ve)
					ve = le;
				while (v < ve && *v == ' ')
					v++;
				vl = (size_t)(ve - v);
				while (vl > 0 && v[vl - 1] == ' ')
					vl--;
				for (size_t i = 0; i < n; i++)
					if (!commits[i] && strlen(names[i]) == vl && strncmp(names[i], v, vl) == 0) {
						commits[i] = strndup(line, (size_t)(tab - line));
						if (!commits[i])
							return -ENOMEM;
					}
				v = ve + 1;
			}
		}
		line = nl ? nl + 1 : NULL;
	}
	return 0;
}

char *autophase_preview_word(const char *prev, const char *arg)
{
	const char *value = NULL;
	char *out;

	if (prev && streq(prev, "--env"))
		value = strchr(arg, '=');
	else if (strncmp(arg, "--env=", 6) == 0)
		value = strchr(arg + 6, '=');
	if (!value)
		return gitrun_redact(arg);
	if (asprintf(&out, "%.*s=<redacted>", (int)(value - arg), arg) < 0)
		return NULL;
	return out;
}

/* What the agent is told it cannot do where it runs (the seed's first_prompt does the same). */
static const char sandbox_note[] =
	"You are running inside an aisb sandbox. Only this project directory is writable; the network "
	"reaches only the hosts this pipeline allows. You cannot push or publish anything: when you are "
	"done, the driver runs .agents/validate.sh, then commits your work on the host and pushes it. Do "
	"not commit (the driver commits the work tree), do not edit .agents/validate.sh or the launcher "
	"(a changed gate refuses the delivery), and do not change .git.";

char *autophase_prompt(const char *phase, const char *rel, const char *text, size_t len, unsigned round,
		       unsigned rounds, int status, const char *out, size_t out_len)
{
	struct strbuf b = { 0 };
	int r = 0;

	if (round > 0)
		r = strbuf_printf(&b, "Fix round %u of %u for phase %s: .agents/validate.sh exited %d on your work. "
				  "Change the work until it passes; its output is at the end. The phase's task (%s):\n\n",
				  round, rounds, phase, status, rel);
	if (r >= 0)
		r = strbuf_put(&b, text, len);
	if (r >= 0)
		r = strbuf_printf(&b, "%s\n---\n%s\n", len && text[len - 1] != '\n' ? "\n" : "", sandbox_note);
	if (r >= 0 && round > 0) {
		r = strbuf_puts(&b, "\n--- output of .agents/validate.sh (its end) ---\n");
		for (size_t i = 0; r >= 0 && i < out_len; i++) {
			unsigned char c = (unsigned char)out[i];
			r = strbuf_putc(&b, (c < 0x20 && c != '\n' && c != '\t') || c == 0x7f ? '?' : (char)c);
		}
	}
	if (r < 0 || !b.p) {
		free(b.p);
		return NULL;
	}
	return b.p;
}

bool autophase_launcher_name_ok(const char *name)
{
	if (!name || !*name || name[0] == '-' || strlen(name) > AUTOPHASE_MAX_NAME)
		return false;
	for (const char *c = name; *c; c++)
		if (!isalnum((unsigned char)*c) && !strchr("_.:+-", *c))
			return false;
	return true;
}

bool autophase_forwards_args(const char *def)
{
	return def && (strstr(def, "$@") || strstr(def, "$*") || strstr(def, "${@") || strstr(def, "${*"));
}
