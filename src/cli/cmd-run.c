// SPDX-License-Identifier: GPL-2.0-or-later
/* cmd-run.c — `aisb run`: load settings, resolve the plan, preview or run it */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/harness.h"
#include "cli/hostenv.h"
#include "cli/import.h"
#include "cli/resolve.h"
#include "cli/sessions.h"
#include "cli/trust.h"
#include "ns/limits.h"
#include "ns/mounts.h"
#include "net/netplan.h"
#include "run/sandbox.h"
#include "run/session.h"
#include "util/util.h"
#include "util/log.h"

/* The project's .aisb policy (cli/trust.h): reloads @s with it when it is trusted, otherwise
 * says in one line why it was ignored. Return: 0 or an exit code. Logs on failure. */
static int load_project_policy(struct aisb_settings *s, int argc, char **argv, const char *config)
{
	_cleanup_free_ char *cwd = getcwd(NULL, 0), *state = sessions_state_dir(hostenv_get);
	_cleanup_free_ char *text = NULL, *origin = NULL;
	struct project_policy pp;
	enum trust_state st;
	int r;

	if (!cwd || !state)
		return 0; /* plan_resolve() reports both */
	r = trust_read_policy(cwd, &pp);
	if (r <= 0) {
		if (r < 0)
			log_warn("project policy '%s/.aisb' ignored: %s", cwd,
				 r == -ELOOP ? "a symlink (a policy is never borrowed from elsewhere)"
				 : r == -EINVAL ? "not a regular file" : r == -EFBIG ? "larger than 64 KiB"
				 : r == -EILSEQ ? "it holds control characters" : strerror(-r));
		trust_policy_done(&pp);
		return 0;
	}
	st = trust_state_of(state, &pp);
	if (st != TRUST_TRUSTED) {
		log_warn("project policy '%s/.aisb' %s and was ignored: review it with 'aisb trust --show', "
			 "approve it with 'aisb trust'", pp.root,
			 st == TRUST_CHANGED ? "changed since you trusted it (by you, or by something that ran here)"
					     : "is not trusted");
		trust_policy_done(&pp);
		return 0;
	}
	text = trust_policy_text(&pp);
	if (!text || asprintf(&origin, "%s/.aisb", pp.root) < 0) {
		trust_policy_done(&pp);
		return AISB_EXIT_FAILED;
	}
	trust_policy_done(&pp);
	settings_free(s);
	return args_load_project(s, argc, argv, config, text, origin, hostenv_get);
}

/* `aisb --version`: aisb's, then the harness's own `--version`, run in a sandbox without
 * network or persistent home (the shared-flags rule, docs/agents.md). */
static int print_versions(struct aisb_settings *s, char **argv)
{
	struct aisb_plan p;
	int r;

	if (s->command || s->shell || streq(s->harness, "shell")) {
		printf("aisb %s\n", PACKAGE_VERSION);
		return 0;
	}
	strv_free(s->allows);
	strv_free(s->allow_files);
	strv_free(s->add_hosts);
	strv_free(s->publish);
	strv_free(s->allow_host_ports);
	s->allows = s->allow_files = s->add_hosts = s->publish = s->allow_host_ports = NULL;
	free(s->proxy);
	s->proxy = NULL;
	s->net = NET_NONE;
	s->net_source = SRC_FLAG;
	s->ephemeral_home = true;
	s->no_cwd = true; /* a version needs no project: from / or a reserved dir it would be 78 */
	free(s->image); /* the host's harness: an image's needs a pull, which --version never does */
	s->image = NULL;
	if (strv_push(&s->command, s->harness) < 0 || strv_push(&s->command, "--version") < 0)
		return AISB_EXIT_FAILED;
	r = plan_resolve(&p, s, hostenv_get, NULL);
	if (r == 0 && p.limits_mode == LIMITS_SCOPE) {
		/* the same re-run in a systemd scope as any run; nothing printed yet */
		plan_free(&p);
		(void)limits_reexec_in_scope(argv);
		return AISB_EXIT_FAILED;
	}
	printf("aisb %s\n", PACKAGE_VERSION);
	if (r == AISB_EXIT_NOTFOUND)
		r = 0; /* harness_check() said where it is and how to run it; aisb's version stands */
	else if (r == 0 && !harness_visible(&p))
		printf("%s: not found where the sandbox looks (see 'aisb --help', Finding the harness)\n", s->harness);
	else if (r == 0) {
		struct aisb_session ss = { 0 };

		printf("%s (inside the sandbox): ", s->harness);
		fflush(stdout);
		r = sandbox_run(&p, &ss);
		session_done(&ss);
	}
	plan_free(&p);
	return r;
}

int cmd_run(int argc, char **argv)
{
	_cleanup_free_ char *config = hostenv_config_path();
	struct aisb_settings s;
	struct aisb_plan p;
	struct aisb_session ss = { 0 }; /* what the run makes (run/session.h) */
	_cleanup_close_ int image_lock = -1; /* keeps gc/rmi off the image's rootfs while we run */
	int r;

	r = args_load(&s, argc, argv, config, hostenv_get);
	if (r == 0 && !s.no_cwd && !s.help)
		r = load_project_policy(&s, argc, argv, config);
	if (r != 0) {
		settings_free(&s);
		return r;
	}
	if (s.help) {
		args_print_help("aisb");
		settings_free(&s);
		return 0;
	}
	if (s.verbose)
		log_set_level(LOG_LVL_DEBUG);
	if (s.version) {
		r = print_versions(&s, argv);
		settings_free(&s);
		return r;
	}
	/* mirrors mount_host_facts(): root callers on the host rootfs that stay kernel uid 0 (no
	 * remap: plan_root_remap_wanted()) need /etc and /opt idmapped or walked;
	 * AISB_TEST_NO_IDMAP=1 (a test hook) takes the walk */
	if (getuid() == 0 && !s.image && !s.dry_run && !s.print_policy && !s.print_ruleset &&
	    !plan_root_remap_wanted(hostenv_get)) {
		const char *t = hostenv_get("AISB_TEST_NO_IDMAP");
		mount_masks_prefetch(!(t && streq(t, "1")));
	}
	/* the whole plan, the image's config and the harness's bridged config included: nothing
	 * amends it after this (cli/resolve.h) */
	r = plan_resolve(&p, &s, hostenv_get, &image_lock);
	if (r != 0)
		goto out;
	/* a git check that a killed aisb left pending runs before this run starts (issue 21) */
	(void)sessions_pending_checks(s.dry_run || s.print_policy || s.print_ruleset);
	if (s.dry_run || s.print_policy || s.print_ruleset) {
		if (s.dry_run)
			plan_print(&p, stdout);
		if (s.print_policy)
			plan_print_policy(&p, stdout);
		if (s.print_ruleset)
			netplan_print_ruleset(p.netp, stdout);
		r = 0;
		goto out;
	}
	if (p.limits_mode == LIMITS_SCOPE) {
		/* No delegated cgroup, but systemd can give us one: re-run inside a scope. Returns
		 * only on failure. */
		(void)limits_reexec_in_scope(argv);
		r = AISB_EXIT_FAILED;
		goto out;
	}
	/* Nothing allowed and no --net chosen: loopback only, said once, so that a failing fetch
	 * is not a mystery (an explicit --net none, net = none in config, or --quiet silences it). */
	if (p.netp && p.netp->defaulted_to_none && !s.quiet)
		log_info("network: loopback only (no --allow entry); add --allow HOST to reach a host, or --net "
			 "none to keep this and silence the notice");
	r = sandbox_run(&p, &ss);
	/* --workspace clone: the new commits come back, validated (workspace/workspace.h); a
	 * refused import fails a command that succeeded (125), its own failure code stands */
	if (p.workspace && ss.workspace_dir &&
	    workspace_finish(&p, &ss, cli_workspace_export, hostenv_get, cli_import_confirm) < 0 && r == 0)
		r = AISB_EXIT_FAILED;
out:
	session_done(&ss);
	plan_free(&p);
	settings_free(&s);
	return r;
}
