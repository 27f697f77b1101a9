// SPDX-License-Identifier: GPL-2.0-or-later
/* cmd-run.c — `aisb run`: load settings, resolve the plan, preview or run it */
#include <stdio.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/hostenv.h"
#include "cli/resolve.h"
#include "ns/limits.h"
#include "net/netplan.h"
#include "ns/sandbox.h"
#include "util/log.h"

int cmd_run(int argc, char **argv)
{
	_cleanup_free_ char *config = hostenv_config_path();
	struct aisb_settings s;
	struct aisb_plan p;
	int r;

	r = args_load(&s, argc, argv, config, hostenv_get);
	if (r != 0) {
		settings_free(&s);
		return r;
	}
	if (s.help) {
		args_print_help("aisb");
		settings_free(&s);
		return 0;
	}
	if (s.version) {
		printf("aisb %s\n", PACKAGE_VERSION);
		settings_free(&s);
		return 0;
	}
	if (s.verbose)
		log_set_level(LOG_LVL_DEBUG);
	r = plan_resolve(&p, &s, hostenv_get);
	if (r != 0)
		goto out;
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
	r = sandbox_run(&p);
out:
	plan_free(&p);
	settings_free(&s);
	return r;
}
