// SPDX-License-Identifier: GPL-2.0-or-later
/* test-image-run.c — image config applied to a plan (policy wins), and the mount plan of an
 * image root (overlay first, no host system dirs) */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

/* fixtures point char * members at string literals; nothing writes through them */
#pragma GCC diagnostic ignored "-Wdiscarded-qualifiers"

#include "cli/image-run.h"
#include "ns/mounts.h"
#include "util/util.h"

static void add_env(struct aisb_plan *p, const char *n, const char *v, bool secret)
{
	p->env = realloc(p->env, (p->n_env + 1) * sizeof(*p->env));
	p->env[p->n_env++] = (struct plan_env){ strdup(n), strdup(v), secret, false };
}

static const char *env_get(const struct aisb_plan *p, const char *n)
{
	for (size_t i = 0; i < p->n_env; i++)
		if (streq(p->env[i].name, n))
			return p->env[i].value;
	return NULL;
}

static void plan_init(struct aisb_plan *p)
{
	memset(p, 0, sizeof(*p));
	add_env(p, "HOME", "/home/sandbox", false);
	add_env(p, "PATH", "/usr/bin:/bin", false);
	add_env(p, "HTTPS_PROXY", "http://127.0.0.1:3128", false);
	add_env(p, "MINE", "user", true);
	p->cwd = strdup("/home/sandbox");
	p->argv = calloc(2, sizeof(char *));
	p->argv[0] = strdup("pi");
}

static void plan_done(struct aisb_plan *p)
{
	for (size_t i = 0; i < p->n_env; i++) {
		free(p->env[i].name);
		free(p->env[i].value);
	}
	free(p->env);
	free(p->cwd);
	strv_free(p->argv);
	free(p->project_src);
}

static char *env_img[] = { "PATH=/opt/x/bin:/usr/bin", "HOME=/root", "HTTPS_PROXY=http://evil:1", "MINE=image",
			   "NEW=1", "LD_PRELOAD=/evil.so", "=bad", "noequals", NULL };
static char *ep[] = { "/entry", NULL };
static char *cmd[] = { "--flag", NULL };

static void test_config_env_and_command(void **state)
{
	struct aisb_settings s = { 0 };
	struct oci_image_config c = { .env = env_img, .working_dir = "/work", .entrypoint = ep, .cmd = cmd };
	struct aisb_plan p;

	plan_init(&p);
	assert_int_equal(image_apply_config(&p, &s, &c), 0);
	assert_string_equal(env_get(&p, "PATH"), "/opt/x/bin:/usr/bin"); /* replaces the default */
	assert_string_equal(env_get(&p, "HOME"), "/home/sandbox");        /* identity is ours */
	assert_string_equal(env_get(&p, "HTTPS_PROXY"), "http://127.0.0.1:3128"); /* policy is ours */
	assert_string_equal(env_get(&p, "MINE"), "user");                 /* the user's --env wins */
	assert_string_equal(env_get(&p, "NEW"), "1");
	assert_null(env_get(&p, "LD_PRELOAD"));
	assert_string_equal(p.cwd, "/work"); /* no project */
	assert_string_equal(p.argv[0], "/entry");
	assert_string_equal(p.argv[1], "--flag");
	assert_null(p.argv[2]);
	plan_done(&p);
}

static void test_config_user_choices_win(void **state)
{
	char *envs[] = { "PATH=/mine", NULL }, *command[] = { "/bin/true", NULL };
	struct aisb_settings s = { .envs = envs, .command = command };
	struct oci_image_config c = { .env = env_img, .working_dir = "/work", .entrypoint = ep, .cmd = cmd };
	struct aisb_plan p;

	plan_init(&p);
	p.project_src = strdup("/home/alice/proj");
	free(p.cwd);
	p.cwd = strdup("/home/alice/proj");
	free(p.argv[0]);
	p.argv[0] = strdup("/bin/true");
	assert_int_equal(image_apply_config(&p, &s, &c), 0);
	assert_string_equal(env_get(&p, "PATH"), "/usr/bin:/bin"); /* --env PATH given */
	assert_string_equal(p.cwd, "/home/alice/proj");            /* the project is the cwd */
	assert_string_equal(p.argv[0], "/bin/true");               /* `--` command */
	plan_done(&p);

	/* WorkingDir must be absolute and without .. */
	c.working_dir = "../etc";
	memset(&s, 0, sizeof(s));
	plan_init(&p);
	assert_int_equal(image_apply_config(&p, &s, &c), 0);
	assert_string_equal(p.cwd, "/home/sandbox");
	plan_done(&p);
}

static void test_mount_plan_image(void **state)
{
	struct aisb_plan p = { 0 };
	struct mount_host_facts f = { 0 };
	struct mount_plan mp;

	p.uid = p.gid = 1000;
	p.user = "sandbox";
	p.home = "/home/sandbox";
	p.rootfs = ROOTFS_IMAGE;
	p.image_rootfs = "/cache/aisb/rootfs/abc";
	f.overlay_upper = "/state/s/overlay/upper";
	f.overlay_work = "/state/s/overlay/work";
	f.session_etc = "/state/s/etc";
	f.lib_link[0] = "usr/bin";
	assert_int_equal(mount_plan_build(&p, &f, NULL, &mp), 0);
	assert_int_equal(mp.ops[0].kind, MOP_OVERLAY);
	assert_string_equal(mp.ops[0].src, "/cache/aisb/rootfs/abc");
	assert_string_equal(mp.ops[0].data, "/state/s/overlay/upper\n/state/s/overlay/work");
	assert_null(mount_plan_find(&mp, "/usr")); /* nothing of the host's system */
	assert_null(mount_plan_find(&mp, "/bin"));
	assert_non_null(mount_plan_find(&mp, "/proc"));
	assert_non_null(mount_plan_find(&mp, "/etc/passwd"));
	assert_true(mount_plan_find(&mp, "/etc/resolv.conf")->flags & MOP_F_OVER_LINK);
	mount_plan_free(&mp);

	/* not kept (or --ephemeral): no upper dirs, the overlay gets a bounded tmpfs */
	f.overlay_upper = f.overlay_work = NULL;
	assert_int_equal(mount_plan_build(&p, &f, NULL, &mp), 0);
	assert_int_equal(mp.ops[0].kind, MOP_OVERLAY);
	assert_true(mp.ops[0].flags & MOP_F_TMPFS_UPPER);
	assert_string_equal(mp.ops[0].data, "mode=0755,size=2147483648");
	mount_plan_free(&mp);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_config_env_and_command),
		cmocka_unit_test(test_config_user_choices_win),
		cmocka_unit_test(test_mount_plan_image),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
