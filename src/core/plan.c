/* SPDX-License-Identifier: GPL-2.0-or-later */
/* plan.c — the plan's own operations: names, environment entries, JSON.
 *
 * The CLI builds a plan (cli/resolve.c) and the core executes it; what both sides need of the
 * plan lives here, below the CLI, so that no module under src/ns, src/net, src/agents... reaches
 * up into src/cli (tests/lint/layers.sh, run by `make lint`).
 */
#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "core/plan.h"
#include "util/homedir.h"
#include "util/log.h"
#include "util/util.h"

const char *net_mode_to_string(enum net_mode m)
{
	static const char *const names[NET_MODE_MAX] = { "none", "allow", "full" };
	return m < NET_MODE_MAX ? names[m] : "?";
}

int net_mode_from_string(const char *s, enum net_mode *out)
{
	for (int m = 0; m < NET_MODE_MAX; m++)
		if (streq(s, net_mode_to_string(m))) {
			*out = m;
			return 0;
		}
	return -EINVAL;
}

bool plan_env_name_valid(const char *name)
{
	if (!name || !(isalpha((unsigned char)*name) || *name == '_'))
		return false;
	for (const char *p = name; *p; p++)
		if (!(isalnum((unsigned char)*p) || *p == '_'))
			return false;
	return strlen(name) < 256;
}

int plan_set_env(struct aisb_plan *p, const char *name, const char *value, bool secret)
{
	for (size_t i = 0; i < p->n_env; i++)
		if (streq(p->env[i].name, name)) {
			char *v = strdup(value);
			if (!v)
				return -ENOMEM;
			free(p->env[i].value);
			p->env[i].value = v;
			p->env[i].secret = secret;
			p->env[i].placeholder = false;
			return 0;
		}
	struct plan_env *n = realloc(p->env, (p->n_env + 1) * sizeof(*n));
	if (!n)
		return -ENOMEM;
	p->env = n;
	n[p->n_env].name = strdup(name);
	n[p->n_env].value = strdup(value);
	n[p->n_env].secret = secret;
	n[p->n_env].placeholder = false;
	if (!n[p->n_env].name || !n[p->n_env].value)
		return -ENOMEM;
	p->n_env++;
	return 0;
}

/* Adds the workspace to plan.json's object (mode, base, branch, target, untracked). */
static void workspace_json(const struct workspace_plan *w, json_object *o)
{
	json_object *ws;

	if (!w)
		return;
	ws = json_object_new_object();
	json_object_object_add(ws, "mode", json_object_new_string("clone"));
	json_object_object_add(ws, "project", json_object_new_string(w->top));
	json_object_object_add(ws, "base", json_object_new_string(w->base));
	json_object_object_add(ws, "branch", w->branch ? json_object_new_string(w->branch) : NULL);
	json_object_object_add(ws, "target", w->target ? json_object_new_string(w->target) : NULL);
	json_object_object_add(ws, "untracked", json_object_new_string(w->untracked_copy ? "copy" : "none"));
	json_object_object_add(o, "workspace", ws);
}

char *plan_to_json(const struct aisb_plan *p, enum net_mode net, const struct aisb_session *ss)
{
	json_object *o = json_object_new_object(), *a, *env, *m;
	char *out;

	if (!o)
		return NULL;
	a = json_object_new_array();
	for (size_t i = 0; p->argv && p->argv[i]; i++)
		json_object_array_add(a, json_object_new_string(p->argv[i]));
	json_object_object_add(o, "command", a);
	json_object_object_add(o, "session", json_object_new_string(ss && ss->id ? ss->id : ""));
	/* read back by `aisb clean` when the generated /etc files are outside the session dir */
	if (ss && ss->etc_dir)
		json_object_object_add(o, "etc_dir", json_object_new_string(ss->etc_dir));
	json_object_object_add(o, "net", json_object_new_string(net_mode_to_string(net)));
	json_object_object_add(o, "rootfs", json_object_new_string(p->rootfs == ROOTFS_IMAGE ? "image" : "host"));
	if (p->image_ref)
		json_object_object_add(o, "image", json_object_new_string(p->image_ref));
	if (p->image_rootfs)
		json_object_object_add(o, "image_rootfs", json_object_new_string(p->image_rootfs));
	json_object_object_add(o, "project", p->project_src ? json_object_new_string(p->project_src) : NULL);
	json_object_object_add(o, "project_dst", p->project_dst ? json_object_new_string(p->project_dst) : NULL);
	json_object_object_add(o, "project_ro", json_object_new_boolean(p->project_ro));
	json_object_object_add(o, "writable_git", json_object_new_boolean(p->writable_git));
	json_object_object_add(o, "container_proc", json_object_new_boolean(p->container_proc));
	json_object_object_add(o, "cwd", json_object_new_string(p->cwd));
	workspace_json(p->workspace, o);
	{
		const char *home = ss ? ss->home_src : p->home_src; /* the session's: canonical */
		json_object_object_add(o, "home", json_object_new_string(home ? home : "ephemeral"));
	}
	json_object_object_add(o, "host_uid", json_object_new_int((int)p->host_uid));
	json_object_object_add(o, "run_uid", json_object_new_int64((int64_t)p->run_uid));
	m = json_object_new_array();
	for (size_t i = 0; i < p->n_mounts; i++) {
		json_object *e = json_object_new_object();
		json_object_object_add(e, "src", json_object_new_string(p->mounts[i].src));
		json_object_object_add(e, "dst", json_object_new_string(p->mounts[i].dst));
		json_object_object_add(e, "ro", json_object_new_boolean(p->mounts[i].ro));
		json_object_array_add(m, e);
	}
	json_object_object_add(o, "mounts", m);
	/* Names only: a value never reaches the session dir. */
	env = json_object_new_array();
	for (size_t i = 0; i < p->n_env; i++)
		json_object_array_add(env, json_object_new_string(p->env[i].name));
	json_object_object_add(o, "env", env);
	json_object_object_add(o, "allow_ptrace", json_object_new_boolean(p->allow_ptrace));
	json_object_object_add(o, "tty_passthrough", json_object_new_boolean(p->tty_passthrough));
	{
		static const char *const modes[LIMITS_MODE_MAX] = { "none", "cgroup", "scope", "degraded" };
		json_object *l = json_object_new_object();
		json_object_object_add(l, "memory_max", json_object_new_int64((int64_t)p->limits.memory_max));
		json_object_object_add(l, "pids_max", json_object_new_int64((int64_t)p->limits.pids_max));
		json_object_object_add(l, "cpu_quota_us", json_object_new_int64((int64_t)p->limits.cpu_quota_us));
		json_object_object_add(l, "cpu_period_us", json_object_new_int64((int64_t)CGROUP_CPU_PERIOD_US));
		json_object_object_add(l, "enforcement", json_object_new_string(
					       p->limits_mode < LIMITS_MODE_MAX ? modes[p->limits_mode] : "?"));
		if (p->limits_mode == LIMITS_DEGRADED)
			json_object_object_add(l, "not_enforced_because", json_object_new_string(p->limits_why));
		json_object_object_add(o, "limits", l);
	}
	out = strdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(o);
	return out;
}

/* Paths the sandbox owns together with everything below them. */
static const char *const reserved_trees[] = {
	"/usr", "/etc", "/var", "/opt", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32",
	"/boot", "/proc", "/sys", "/dev", "/root", "/run", "/tmp", "/project",
};

bool plan_path_is_reserved(const char *path)
{
	if (!path_is_absolute(path) || streq(path, "/") || streq(path, "/home"))
		return true;
	for (size_t i = 0; i < ELEMENTSOF(reserved_trees); i++)
		if (path_startswith(path, reserved_trees[i]))
			return true;
	/* /home/sandbox, /home/sandbox-x, ...: the sandbox's home and anything that looks like it. */
	if (strncmp(path, PLAN_SANDBOX_HOME, strlen(PLAN_SANDBOX_HOME)) == 0)
		return true;
	return false;
}

int plan_project_dst(const char *cwd, const char *workdir, char **dst, bool *relocated)
{
	*relocated = false;
	if (!workdir || streq(workdir, "auto")) {
		if (plan_path_is_reserved(cwd)) {
			*relocated = true;
			*dst = strdup("/project");
		} else
			*dst = strdup(cwd);
		return *dst ? 0 : -ENOMEM;
	}
	if (!path_is_absolute(workdir) || path_has_dotdot(workdir))
		return log_error("invalid --workdir '%s': use 'auto' or an absolute path without '..'", workdir);
	if (plan_path_is_reserved(workdir) && !streq(workdir, "/project"))
		return log_error("invalid --workdir '%s': the sandbox owns that path", workdir);
	*dst = strdup(workdir);
	return *dst ? 0 : -ENOMEM;
}

/* the rule every command shares (util/homedir.h) */
char *plan_host_home(env_getter get)
{
	return homedir_home(get, NULL);
}

void settings_free(struct aisb_settings *s)
{
	free(s->rootfs);
	free(s->image);
	free(s->tls_verify);
	free(s->cert_dir);
	strv_free(s->authfiles);
	free(s->harness);
	free(s->workdir);
	free(s->agents_dir);
	free(s->proxy);
	free(s->memory);
	free(s->pids);
	free(s->cpus);
	free(s->home);
	strv_free(s->harness_from);
	free(s->pi_token_env);
	strv_free(s->key_via_gate);
	free(s->thinking);
	free(s->workspace);
	free(s->untracked);
	free(s->target);
	strv_free(s->mounts);
	strv_free(s->envs);
	strv_free(s->env_files);
	strv_free(s->allows);
	strv_free(s->allow_files);
	strv_free(s->add_hosts);
	strv_free(s->publish);
	strv_free(s->allow_host_ports);
	strv_free(s->harness_args);
	strv_free(s->command);
	memset(s, 0, sizeof(*s));
}
