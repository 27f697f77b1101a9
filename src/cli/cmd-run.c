// SPDX-License-Identifier: GPL-2.0-or-later
/* cmd-run.c — `aisb run`: load settings, resolve the plan, preview or run it */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "agents/bridge.h"
#include "cli/args.h"
#include "cli/commands.h"
#include "cli/hostenv.h"
#include "cli/image-run.h"
#include "cli/resolve.h"
#include "ns/limits.h"
#include "ns/mounts.h"
#include "net/netplan.h"
#include "ns/sandbox.h"
#include "util/log.h"

int cmd_run(int argc, char **argv)
{
	_cleanup_free_ char *config = hostenv_config_path();
	struct aisb_settings s;
	struct aisb_plan p;
	_cleanup_close_ int image_lock = -1; /* keeps gc/rmi off the image's rootfs while we run */
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
	/* mirrors mount_host_facts(): root callers on the host rootfs need /etc and /opt idmapped
	 * or walked; AISB_TEST_NO_IDMAP=1 (a test hook) takes the walk */
	if (getuid() == 0 && !s.image && !s.dry_run && !s.print_policy && !s.print_ruleset) {
		const char *t = hostenv_get("AISB_TEST_NO_IDMAP");
		mount_masks_prefetch(!(t && streq(t, "1")));
	}
	r = plan_resolve(&p, &s, hostenv_get);
	if (r != 0)
		goto out;
	if (p.rootfs == ROOTFS_IMAGE) {
		r = image_attach(&p, &s, s.dry_run || s.print_policy || s.print_ruleset, &image_lock);
		if (r != 0)
			goto out;
	}
	/* The harness's host config, rewritten for the sandbox home; refuses a harness whose model
	 * endpoint is not allowed. After image_attach(): an image's Cmd may replace the harness. */
	{
		_cleanup_free_ char *home = plan_host_home(hostenv_get);
		r = home ? bridge_resolve(&p, &s, hostenv_get, home) : 0;
		if (r != 0)
			goto out;
	}
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
