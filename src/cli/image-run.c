// SPDX-License-Identifier: GPL-2.0-or-later
/* image-run.c — the --image part of `aisb run`: rootfs from the store, image config into the plan */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli/image-run.h"
#include "cli/regflags.h"
#include "rootfs/image.h"
#include "util/log.h"
#include "util/util.h"

/* Variables an image may never set: the sandbox's identity and the network policy's plumbing. */
static const char *const image_env_denied[] = {
	"HOME", "USER", "LOGNAME", "SHELL", "container", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY",
	"NO_PROXY", "http_proxy", "https_proxy", "all_proxy", "no_proxy", "LD_PRELOAD", "LD_AUDIT",
};

static struct plan_env *env_find(struct aisb_plan *p, const char *name, size_t n)
{
	for (size_t i = 0; i < p->n_env; i++)
		if (strlen(p->env[i].name) == n && strncmp(p->env[i].name, name, n) == 0)
			return &p->env[i];
	return NULL;
}

static bool user_set(const struct aisb_settings *s, const char *name, size_t n)
{
	for (size_t i = 0; s->envs && s->envs[i]; i++)
		if (strncmp(s->envs[i], name, n) == 0 && (s->envs[i][n] == 0 || s->envs[i][n] == '='))
			return true;
	return false;
}

int image_apply_config(struct aisb_plan *p, const struct aisb_settings *s, const struct oci_image_config *cfg)
{
	for (size_t i = 0; cfg->env && cfg->env[i]; i++) {
		const char *kv = cfg->env[i], *eq = strchr(kv, '=');
		size_t n;
		struct plan_env *e, *nv;
		bool denied = false;

		if (!eq || eq == kv)
			continue;
		n = (size_t)(eq - kv);
		for (size_t k = 0; k < ELEMENTSOF(image_env_denied); k++)
			denied |= strlen(image_env_denied[k]) == n && strncmp(image_env_denied[k], kv, n) == 0;
		if (denied)
			continue;
		e = env_find(p, kv, n);
		if (e) {
			/* only PATH, and only when the user did not choose it */
			if (n != 4 || strncmp(kv, "PATH", 4) != 0 || e->secret || user_set(s, "PATH", 4))
				continue;
			char *v = strdup(eq + 1);
			if (!v)
				return -ENOMEM;
			free(e->value);
			e->value = v;
			continue;
		}
		nv = realloc(p->env, (p->n_env + 1) * sizeof(*nv));
		if (!nv)
			return -ENOMEM;
		p->env = nv;
		nv[p->n_env] = (struct plan_env){ .name = strndup(kv, n), .value = strdup(eq + 1), .secret = false };
		if (!nv[p->n_env].name || !nv[p->n_env].value) {
			free(nv[p->n_env].name);
			free(nv[p->n_env].value);
			return -ENOMEM;
		}
		p->n_env++;
	}

	if (!p->project_src && cfg->working_dir && path_is_absolute(cfg->working_dir) &&
	    !path_has_dotdot(cfg->working_dir)) {
		char *c = strdup(cfg->working_dir);
		if (!c)
			return -ENOMEM;
		free(p->cwd);
		p->cwd = c;
	}

	if (!s->command && !s->shell && !strv_length(s->harness_args) && (cfg->entrypoint || cfg->cmd)) {
		char **argv = calloc(1, sizeof(char *));
		if (!argv)
			return -ENOMEM;
		for (size_t i = 0; cfg->entrypoint && cfg->entrypoint[i]; i++)
			if (strv_push(&argv, cfg->entrypoint[i]) < 0)
				goto oom;
		for (size_t i = 0; cfg->cmd && cfg->cmd[i]; i++)
			if (strv_push(&argv, cfg->cmd[i]) < 0)
				goto oom;
		if (!argv[0]) {
			strv_free(argv);
			return 0;
		}
		strv_free(p->argv);
		p->argv = argv;
		return 0;
	oom:
		strv_free(argv);
		return -ENOMEM;
	}
	return 0;
}

/* --tls-verify, --cert-dir, --authfile of the run, through pull's code. Logs on failure. */
static int image_registry_flags(struct image_opts *o, const struct aisb_settings *s)
{
	const struct regflags f = { .tls_verify = s->tls_verify, .cert_dir = s->cert_dir, .authfiles = s->authfiles };
	return regflags_apply(&o->reg, &f);
}

int image_attach(struct aisb_plan *p, const struct aisb_settings *s, env_getter get, bool preview, int *lock_fd)
{
	struct image_opts o;
	struct oci_image_config cfg = { 0 };
	int r;

	if (lock_fd)
		*lock_fd = -1;
	if (!lock_fd)
		preview = true; /* nobody would hold the lock: nothing is pulled (cli/image-run.h) */
	if (image_opts_init(&o, get) < 0 || image_registry_flags(&o, s) < 0) {
		image_opts_done(&o);
		return AISB_EXIT_POLICY;
	}
	if (preview) {
		/* previews never pull or write: show what the store has */
		struct store *st = NULL;
		struct store_ref pin;
		r = 0;
		if (store_open(o.store_root, &st) == 0 && image_find_pin(st, p->image_ref, &pin) == 0) {
			p->image_rootfs = store_rootfs_path(st, pin.rootfs_id);
			if (image_load_config(st, &pin, &cfg) == 0)
				r = image_apply_config(p, s, &cfg);
			store_ref_done(&pin);
		}
		store_free(st);
		oci_config_done(&cfg);
		image_opts_done(&o);
		/* a preview that silently lost the image's env/cwd/argv would show another plan than the run */
		if (r < 0)
			return log_error("out of memory"), AISB_EXIT_FAILED;
		return 0;
	}
	r = image_prepare_rootfs(p->image_ref, &o, &p->image_rootfs, &cfg, lock_fd);
	image_opts_done(&o);
	if (r < 0)
		return r == -EINVAL ? AISB_EXIT_POLICY : AISB_EXIT_FAILED;
	r = image_apply_config(p, s, &cfg);
	oci_config_done(&cfg);
	if (r < 0) {
		if (*lock_fd >= 0)
			close(*lock_fd);
		*lock_fd = -1;
		return log_error("out of memory"), AISB_EXIT_FAILED;
	}
	return 0;
}
