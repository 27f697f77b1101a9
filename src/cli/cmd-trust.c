// SPDX-License-Identifier: GPL-2.0-or-later
/* cmd-trust.c — `aisb trust [--show|--revoke] [DIR]`: approve a project's .aisb policy */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/flags.h"
#include "cli/hostenv.h"
#include "cli/sessions.h"
#include "cli/trust.h"
#include "net/allow.h"
#include "util/log.h"
#include "util/strbuf.h"
#include "util/util.h"

static const char *const state_words[TRUST_STATE_MAX] = {
	[TRUST_NONE] = "no project policy",
	[TRUST_UNTRUSTED] = "not trusted: ignored by every run",
	[TRUST_CHANGED] = "changed since it was trusted: ignored by every run",
	[TRUST_TRUSTED] = "trusted: applied to every run here",
};

/* Parses the policy as a run would (args_apply_project(): a disallowed key is refused) and
 * checks each allow entry. Fills @s. Return: 0 or 78. Logs on failure. */
static int check_policy(const struct project_policy *pp, struct aisb_settings *s)
{
	_cleanup_free_ char *text = trust_policy_text(pp), *origin = NULL;
	struct allow_list l = { 0 };
	int r = 0;

	if (!text || asprintf(&origin, "%s/.aisb", pp->root) < 0)
		return AISB_EXIT_FAILED;
	if (args_defaults(s) < 0 || args_apply_project(s, text, origin) < 0)
		return AISB_EXIT_POLICY;
	for (size_t i = 0; s->allows && s->allows[i] && r == 0; i++)
		if (allow_list_add(&l, s->allows[i]) < 0)
			r = AISB_EXIT_POLICY;
	allow_list_free(&l);
	return r;
}

/* What the policy adds to every run: names only for env (a value may be a secret). */
static void print_effect(const struct aisb_settings *s)
{
	struct aisb_settings d;

	(void)args_defaults(&d);
	for (size_t i = 0; s->allows && s->allows[i]; i++)
		printf("  allow   += %s\n", s->allows[i]);
	for (size_t i = 0; s->envs && s->envs[i]; i++) {
		const char *eq = strchr(s->envs[i], '=');
		printf("  env     += %.*s%s\n", (int)(eq ? (size_t)(eq - s->envs[i]) : strlen(s->envs[i])), s->envs[i],
		       eq ? "=<redacted>" : " (from your environment)");
	}
	if (!streq(s->harness, d.harness))
		printf("  harness  = %s\n", s->harness);
	if (s->memory)
		printf("  memory   = %s\n", s->memory);
	if (s->pids)
		printf("  pids     = %s\n", s->pids);
	if (s->cpus)
		printf("  cpus     = %s\n", s->cpus);
	if (s->workspace)
		printf("  workspace = %s\n", s->workspace);
	settings_free(&d);
}

static void print_env_entry(const char *sign, const char *e)
{
	const char *eq = strchr(e, '=');
	printf("  %s env     %.*s%s\n", sign, (int)(eq ? (size_t)(eq - e) : strlen(e)), e, eq ? "=<redacted>" : "");
}

static void print_scalar_change(const char *key, const char *was, const char *now)
{
	if (!streq(was ? was : "", now ? now : ""))
		printf("  ~ %-7s %s -> %s\n", key, was ? was : "(unset)", now ? now : "(unset)");
}

/* What changed between the trusted policy @o and the current @s: entries added (+) and removed
 * (-), scalars changed (~); env values never shown. */
static void print_changes(const struct aisb_settings *o, const struct aisb_settings *s)
{
	for (size_t i = 0; s->allows && s->allows[i]; i++)
		if (!strv_contains(o->allows, s->allows[i]))
			printf("  + allow   %s\n", s->allows[i]);
	for (size_t i = 0; o->allows && o->allows[i]; i++)
		if (!strv_contains(s->allows, o->allows[i]))
			printf("  - allow   %s\n", o->allows[i]);
	/* the record holds env values only as fingerprints (trust_redact_env()): compare those */
	char **now = NULL;
	for (size_t i = 0; s->envs && s->envs[i]; i++)
		(void)strv_push_take(&now, trust_redact_env(s->envs[i]));
	for (size_t i = 0; now && now[i]; i++)
		if (!strv_contains(o->envs, now[i]))
			print_env_entry("+", now[i]);
	for (size_t i = 0; o->envs && o->envs[i]; i++)
		if (!strv_contains(now, o->envs[i]))
			print_env_entry("-", o->envs[i]);
	strv_free(now);
	print_scalar_change("harness", o->harness, s->harness);
	print_scalar_change("memory", o->memory, s->memory);
	print_scalar_change("pids", o->pids, s->pids);
	print_scalar_change("cpus", o->cpus, s->cpus);
	print_scalar_change("workspace", o->workspace, s->workspace);
}

/* For a changed policy: the difference to what was trusted, when the record still holds it. */
static void show_changes(const char *state, const struct project_policy *pp, const struct aisb_settings *s)
{
	_cleanup_free_ char *old = trust_recorded_text(state, pp);
	struct aisb_settings o = { 0 };

	if (!old || args_defaults(&o) < 0 || args_apply_project(&o, old, "the trusted policy") < 0) {
		settings_free(&o);
		return;
	}
	printf("changes since it was trusted:\n");
	print_changes(&o, s);
	settings_free(&o);
}

int cmd_trust(int argc, char **argv)
{
	_cleanup_free_ char *state = sessions_state_dir(hostenv_get);
	struct project_policy pp;
	struct aisb_settings s = { 0 };
	bool show = false, revoke = false;
	const char *dir = ".";
	enum trust_state st;
	int r;
	struct cli_args args;
	const struct cli_flag *f;
	const char *val;
	enum cli_arg k;

	cli_args_init(&args, "trust", argc, argv);
	while ((k = cli_args_next(&args, &f, &val)) != CLI_ARG_END) {
		if (k == CLI_ARG_BAD)
			return AISB_EXIT_USAGE;
		if (k == CLI_ARG_WORD && !streq(dir, "."))
			return log_error("trust: unexpected argument '%s' (see 'aisb trust --help')", val), AISB_EXIT_USAGE;
		if (k == CLI_ARG_WORD) {
			dir = val;
			continue;
		}
		if (cli_flag_is(f, "show"))
			show = true;
		else if (cli_flag_is(f, "revoke"))
			revoke = true;
		else if (cli_flag_is(f, "help")) {
			printf("usage: aisb trust [--show|--revoke] [DIR]\n"
			       "Approves the exact content of DIR/.aisb/config and DIR/.aisb/allow (default: the current\n"
			       "directory) for runs in DIR; any later change, by you or by a sandbox, makes runs ignore\n"
			       "it until you trust it again. Project keys: allow, env, harness, memory, pids, cpus.\n"
			       "--show prints what the policy would add and whether it is trusted; --revoke forgets it.\n");
			return 0;
		} else
			return cli_flag_unhandled("trust", f);
	}
	if (show && revoke)
		return log_error("trust: --show and --revoke exclude each other"), AISB_EXIT_USAGE;
	if (sessions_state_dir_checked(hostenv_get, &state) < 0)
		return AISB_EXIT_POLICY; /* the environment names no usable dir (sessions.h) */
	r = trust_read_policy(dir, &pp);
	if (r < 0) {
		log_error("trust: cannot read the policy in '%s/.aisb': %s", dir,
			  r == -ELOOP ? "it is a symlink; a policy must be the project's own file"
			  : r == -EFBIG ? "larger than 64 KiB" : r == -EINVAL ? "not a regular file"
			  : r == -EILSEQ ? "it holds control characters" : strerror(-r));
		trust_policy_done(&pp);
		return AISB_EXIT_POLICY;
	}
	if (r == 0 && !revoke) {
		printf("%s: no project policy (.aisb/config or .aisb/allow)\n", pp.root ? pp.root : dir);
		trust_policy_done(&pp);
		return show ? 0 : 1;
	}
	if (revoke) {
		r = trust_record(state, &pp, true);
		if (r < 0)
			log_error_errno(r, "trust: cannot remove the trust record: %m");
		else
			printf("%s: trust revoked\n", pp.root);
		trust_policy_done(&pp);
		return r < 0 ? AISB_EXIT_FAILED : 0;
	}
	st = trust_state_of(state, &pp);
	r = check_policy(&pp, &s);
	printf("%s/.aisb (sha256 %.16s...): %s\n", pp.root, pp.hash, state_words[st]);
	if (r != 0) {
		log_error("trust: the policy is invalid (see above); nothing was trusted");
		settings_free(&s);
		trust_policy_done(&pp);
		return r;
	}
	if (st == TRUST_CHANGED)
		show_changes(state, &pp, &s);
	printf("%s every run in this directory:\n", show ? (st == TRUST_TRUSTED ? "adds to" : "would add to") : "adds to");
	print_effect(&s);
	if (!show && st != TRUST_TRUSTED) {
		r = trust_record(state, &pp, false);
		if (r < 0) {
			log_error_errno(r, "trust: cannot write the trust record under '%s/trust': %m", state);
			r = AISB_EXIT_FAILED;
		} else
			printf("trusted; any change to .aisb/ needs 'aisb trust' again\n");
	} else if (show && st != TRUST_TRUSTED) {
		_cleanup_free_ char *w = streq(dir, ".") ? NULL : shell_word(dir);
		printf("approve with: aisb trust%s%s\n", w ? " " : "", w ? w : "");
	}
	settings_free(&s);
	trust_policy_done(&pp);
	return r;
}
