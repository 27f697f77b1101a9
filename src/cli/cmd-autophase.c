// SPDX-License-Identifier: GPL-2.0-or-later
/* cmd-autophase.c — `aisb autophase`: parse, check the run flags, hand on to the pipeline driver */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/flags.h"
#include "cli/hostenv.h"
#include "cli/resolve.h"
#include "cli/sessions.h"
#include "pipeline/autophase.h"
#include "util/log.h"
#include "util/strbuf.h"
#include "util/util.h"

/* Run flags a unit cannot take: they would start nothing, start something else than the
 * launcher, or leave the project out of the sandbox. */
static const char *const refused_run_flags[] = {
	"dry-run", "print-policy", "print-ruleset", "shell", "harness-args", "help", "version", "no-cwd",
};

/* Checks the flags after `--` against run's option table: every one a known run flag (a
 * positional word would become harness arguments), with its value. Logs on failure. */
static int check_run_flags(char *const *v)
{
	for (size_t i = 0; v && v[i]; i++) {
		const char *a = v[i], *eq;
		struct cli_flag f;
		size_t len, k;
		bool found = false;

		if (strncmp(a, "--", 2) != 0 || !a[2])
			return log_error("autophase: '%s' after '--' is not a run flag (only aisb run's sandbox flags go "
					 "there; the unit's command is the launcher)", a), -EINVAL;
		eq = strchr(a + 2, '=');
		len = eq ? (size_t)(eq - a - 2) : strlen(a + 2);
		for (k = 0; cli_command_flag(cli_command_find("run"), k, &f); k++)
			if (strlen(f.name) == len && strncmp(f.name, a + 2, len) == 0) {
				found = true;
				break;
			}
		if (!found)
			return log_error("autophase: unknown run flag '%.*s' (see 'aisb --help')", (int)len + 2, a), -EINVAL;
		for (k = 0; k < ELEMENTSOF(refused_run_flags); k++)
			if (streq(f.name, refused_run_flags[k]))
				return log_error("autophase: --%s cannot be given to the units (use 'aisb autophase "
						 "--dry-run' for a plan)", f.name), -EINVAL;
		if (f.value != CLI_VALUE_NONE && !eq && !v[++i])
			return log_error("autophase: run flag --%s needs a value", f.name), -EINVAL;
	}
	return 0;
}

static void usage(void)
{
	printf("usage: aisb autophase [--launcher CMD] [--push REMOTE [--push-branch BRANCH]]\n"
	       "                      [--retries N] [--backoff SECONDS] [--fix-rounds N]\n"
	       "                      [--validate-in sandbox|host] [--pi-cmd NAME] [--library LIB]\n"
	       "                      [--trust-git-changes] [--status|--dry-run] [-- RUN-FLAGS...]\n"
	       "Runs the project's .agents/phases/NN-name.md in name order: for each phase not yet on the\n"
	       "branch, the launcher runs in a sandbox ('aisb run RUN-FLAGS -- LAUNCHER PHASE-FILE', the\n"
	       "phase also on stdin), then .agents/validate.sh in another; when both exit 0 the work tree\n"
	       "is committed on the host (trailer 'Aisb-Phase: NN-name') and, with --push, pushed.\n"
	       "Launcher: --launcher CMD (words split at blanks, no shell), else 'autophase_launcher = CMD'\n"
	       "in the aisb config, else the executable .agents/launcher, else the host launcher\n"
	       "sandbox-pi. A host launcher (--pi-cmd NAME, AISB_AP_PI_CMD, sandbox-pi) is your own\n"
	       "function, alias or program found in ~/.bashrc.d/*, ~/.bashrc, ~/.bash_aliases,\n"
	       "~/.profile or PATH; it runs on the host per unit and must run aisb with \"$@\"\n"
	       "(RUN-FLAGS, the phase's variables, then -p PROMPT, or -- validate.sh PHASE-FILE).\n"
	       "Delivery is refused (78) when gitguard quarantined files a unit planted for git or the\n"
	       "hooks or config of .git changed since before the first unit (--trust-git-changes accepts\n"
	       "both), when .agents/validate.sh or the launcher file changed, or HEAD left the branch.\n"
	       "A launcher whose program is one of aisb's harnesses runs as the harness (config bridged).\n"
	       "An agent that exits non-zero is rerun up to --retries times (2), after --backoff seconds\n"
	       "(30, doubled each time); a failed validation gets up to --fix-rounds (2) rounds of the\n"
	       "agent with the fix prompt (the failure and validate.sh's output) and the gate again.\n"
	       "--validate-in host runs validate.sh on this machine, outside the sandbox (warned).\n"
	       "--library LIB runs the seed's pipeline library with pi, first_prompt, fix_prompt,\n"
	       "run_validation and push_phase shadowed (refused unless it defines them and run_pipeline):\n"
	       "its units run through the driver's launcher and guards, its work is delivered by the\n"
	       "driver's own commit and push.\n"
	       "--status reports where the pipeline stands; --dry-run checks everything and prints the\n"
	       "plan; neither starts a sandbox or commits.\n"
	       "Exit: 0 all delivered; 1 a phase, its validation, commit or push failed; 2 usage;\n"
	       "77/78/125 from a unit's aisb run; 78 a refusal; 128+N a unit killed by signal N.\n");
}

/* `autophase_launcher` from the user's config. Return: 0 or an exit code. Logs on failure. */
static int config_launcher(const char *path, char **out)
{
	_cleanup_free_ char *text = NULL;
	int r;

	*out = NULL;
	if (!path)
		return 0;
	r = read_file_at(AT_FDCWD, path, 1 << 20, &text, NULL);
	if (r == -ENOENT)
		return 0;
	if (r < 0)
		return log_error_errno(r, "cannot read config '%s': %m", path), AISB_EXIT_POLICY;
	return args_config_lookup(text, "autophase_launcher", out) < 0 ? AISB_EXIT_FAILED : 0;
}

/* The caller's variables a push that reads the user's git config gets (gitrun.h
 * .user_config): what a credential helper or ssh typically needs, named, nothing else. */
static const char *const push_env_names[] = {
	"DISPLAY", "WAYLAND_DISPLAY", "DBUS_SESSION_BUS_ADDRESS", "XDG_RUNTIME_DIR", "GNUPGHOME", "GPG_AGENT_INFO",
	"PASSWORD_STORE_DIR", "USER", "LOGNAME",
};

/* The caller's PATH without empty or relative entries (they would name the directory git runs
 * in), for a credential helper of the user's config. Return: "PATH=..." malloc'd, or NULL. */
static char *push_path(const char *path)
{
	struct strbuf b = { 0 };

	if (!path || strbuf_puts(&b, "PATH=") < 0)
		return NULL;
	for (const char *e = path; *e;) {
		size_t n = strcspn(e, ":");
		if (e[0] == '/' && ((b.n > 5 && strbuf_putc(&b, ':') < 0) || strbuf_put(&b, e, n) < 0))
			break;
		e += n + (e[n] == ':');
	}
	if (b.n > 5)
		return b.p;
	free(b.p);
	return NULL;
}

/* --retries, --backoff, --fix-rounds: a number from 0 to 20 (3600 for --backoff) into @o.
 * Return: 0 or AISB_EXIT_USAGE (said). */
static int parse_count(const struct cli_flag *f, const char *val, struct autophase_options *o)
{
	unsigned *dst = cli_flag_is(f, "retries")   ? &o->retries
			: cli_flag_is(f, "backoff") ? &o->backoff
						    : &o->fix_rounds;
	unsigned max = cli_flag_is(f, "backoff") ? 3600 : 20;
	char *end = NULL;
	unsigned long v;

	errno = 0;
	v = strtoul(val, &end, 10);
	if (errno || !*val || *end || val[0] == '-' || v > max)
		return log_error("autophase: --%s takes a number from 0 to %u", f->name, max), AISB_EXIT_USAGE;
	*dst = (unsigned)v;
	return 0;
}

/* The command line into @o (run's flags for the units after "--" in o->run_flags); --help
 * prints the usage and sets @help. Return: 0 or AISB_EXIT_USAGE (said). */
static int parse_args(int argc, char **argv, struct autophase_options *o, bool *help)
{
	struct cli_args args;
	const struct cli_flag *f;
	const char *val;
	enum cli_arg kind;

	cli_args_init(&args, "autophase", argc, argv);
	while ((kind = cli_args_next(&args, &f, &val)) != CLI_ARG_END) {
		if (kind == CLI_ARG_BAD)
			return AISB_EXIT_USAGE;
		if (kind == CLI_ARG_WORD && args.words_only) { /* after "--": run's flags for the units */
			o->run_flags = args.argv + args.i - 1;
			break;
		}
		if (kind == CLI_ARG_WORD)
			return log_error("autophase: unexpected argument '%s' (see 'aisb autophase --help')", val),
			       AISB_EXIT_USAGE;
		if (cli_flag_is(f, "help")) {
			usage();
			*help = true;
			return 0;
		} else if (cli_flag_is(f, "status"))
			o->status = true;
		else if (cli_flag_is(f, "dry-run"))
			o->dry_run = true;
		else if (cli_flag_is(f, "push-only"))
			o->push_only = true;
		else if (cli_flag_is(f, "trust-git-changes"))
			o->trust_git_changes = true;
		else if (cli_flag_is(f, "retries") || cli_flag_is(f, "backoff") || cli_flag_is(f, "fix-rounds")) {
			if (parse_count(f, val, o) != 0)
				return AISB_EXIT_USAGE;
		} else if (cli_flag_is(f, "validate-in")) {
			if (!streq(val, "sandbox") && !streq(val, "host"))
				return log_error("autophase: --validate-in takes 'sandbox' or 'host'"), AISB_EXIT_USAGE;
			o->validate_on_host = streq(val, "host");
		} else if (cli_flag_is(f, "launcher") || cli_flag_is(f, "push") || cli_flag_is(f, "push-branch") ||
			   cli_flag_is(f, "pi-cmd") || cli_flag_is(f, "library")) {
			if (!*val)
				return log_error("autophase: --%s needs a value", f->name), AISB_EXIT_USAGE;
			*(cli_flag_is(f, "launcher") ? &o->launcher : cli_flag_is(f, "pi-cmd") ? &o->pi_cmd
			  : cli_flag_is(f, "library") ? &o->library : cli_flag_is(f, "push") ? &o->push_remote
			  : &o->push_branch) = val;
		} else
			return cli_flag_unhandled("autophase", f);
	}
	return 0;
}

/* The flags that exclude or need each other, and the push values as git arguments. Return: 0
 * or AISB_EXIT_USAGE (said). */
static int check_args(const struct autophase_options *o)
{
	if (o->status && o->dry_run)
		return log_error("autophase: --status and --dry-run exclude each other"), AISB_EXIT_USAGE;
	/* both end up as git arguments: never an option */
	if ((o->push_remote && o->push_remote[0] == '-') ||
	    (o->push_branch && (o->push_branch[0] == '-' || strpbrk(o->push_branch, ": \t~^?*[\\"))))
		return log_error("autophase: invalid --push or --push-branch value (a remote, and a branch name)"),
		       AISB_EXIT_USAGE;
	if (o->push_only && (!o->push_remote || o->status || o->dry_run || o->library))
		return log_error("autophase: --push-only needs --push REMOTE and excludes --status, --dry-run and --library"),
		       AISB_EXIT_USAGE;
	if (o->push_branch && !o->push_remote)
		return log_error("autophase: --push-branch needs --push REMOTE"), AISB_EXIT_USAGE;
	if (check_run_flags(o->run_flags) < 0)
		return AISB_EXIT_USAGE;
	return 0;
}

/* What the driver reads of the caller's environment into @o: the PATH, the host launcher
 * (AISB_AP_PI_CMD, unless --pi-cmd), ssh's agent, git's identity, and for a push that reads
 * the user's git config the named variables of push_env_names (@push_env, owned by the caller).
 * Return: 0 or an exit code (said). */
static int host_options(struct autophase_options *o, char ***push_env)
{
	char *p;

	o->xdg_config_home = hostenv_get("XDG_CONFIG_HOME");
	o->path = hostenv_get("PATH");
	if (!o->pi_cmd && hostenv_get("AISB_AP_PI_CMD") && *hostenv_get("AISB_AP_PI_CMD"))
		o->pi_cmd = hostenv_get("AISB_AP_PI_CMD");
	if (o->pi_cmd && o->launcher)
		return log_error("autophase: --launcher (a command inside the sandbox) and a host launcher (--pi-cmd or "
				 "AISB_AP_PI_CMD) exclude each other"),
		       AISB_EXIT_USAGE;
	o->ssh_auth_sock = hostenv_get("SSH_AUTH_SOCK");
	o->env_name = hostenv_get("GIT_AUTHOR_NAME");
	o->env_email = hostenv_get("GIT_AUTHOR_EMAIL");
	p = push_path(hostenv_get("PATH"));
	if (p && strv_push_take(push_env, p) < 0)
		return AISB_EXIT_FAILED;
	for (size_t k = 0; k < ELEMENTSOF(push_env_names); k++) {
		const char *v = hostenv_get(push_env_names[k]);
		_cleanup_free_ char *e = NULL;
		if (v && (asprintf(&e, "%s=%s", push_env_names[k], v) < 0 || strv_push(push_env, e) < 0))
			return AISB_EXIT_FAILED;
	}
	o->push_env = (const char *const *)*push_env;
	return 0;
}

int cmd_autophase(int argc, char **argv)
{
	_cleanup_strv_free_ char **push_env = NULL;
	_cleanup_free_ char *config = hostenv_config_path(), *cfg_launcher = NULL, *home = NULL;
	_cleanup_free_ char *state = sessions_state_dir(hostenv_get);
	struct autophase_options o = { .self = "/proc/self/exe", .retries = 2, .backoff = 30, .fix_rounds = 2 };
	bool help = false;
	int r;

	r = parse_args(argc, argv, &o, &help);
	if (r != 0 || help)
		return r;
	if ((r = check_args(&o)) != 0)
		return r;
	r = config_launcher(config, &cfg_launcher);
	if (r != 0)
		return r;
	home = plan_host_home(hostenv_get);
	o.config_launcher = cfg_launcher;
	o.state_dir = state;
	o.config_path = config;
	o.home = home;
	if ((r = host_options(&o, &push_env)) != 0)
		return r;
	return autophase_main(&o);
}
