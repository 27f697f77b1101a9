// SPDX-License-Identifier: GPL-2.0-or-later
/* pipeline.c — build_run(): the recipe read and checked, the preview, the choice of builder
 * (build/pipeline.h); and the context listing, scratch dir and state files both builders use.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "build/native.h"
#include "build/pipeline-internal.h"
#include "build/podman.h"
#include "build/recipe.h"
#include "core/plan.h"
#include "net/netplan.h"
#include "rootfs/store.h"
#include "util/homedir.h"
#include "util/hostenv.h"
#include "util/log.h"
#include "util/util.h"

const char *build_recipe_name(const struct build_request *req)
{
	return req->file ? req->file : "(built-in recipe)";
}

int build_report_recipe(const char *name, int r, const struct cf_error *err)
{
	if (r == -ENOMEM)
		log_error_errno(r, "Out of memory");
	else if (err->line)
		log_error("%s:%u: %s", name, err->line, err->msg);
	else
		log_error("%s: %s", name, err->msg);
	return r == -ENOMEM ? AISB_EXIT_FAILED : AISB_EXIT_POLICY;
}

int build_registry_over(struct registry_opts *reg, const struct build_request *o)
{
	char **v;

	if (!o->reg_given)
		return 0;
	reg->tls_verify = o->reg.tls_verify;
	if (o->reg.cert_dir)
		reg->cert_dir = o->reg.cert_dir;
	v = strv_copy(o->reg.auth_files);
	for (size_t i = 0; v && reg->auth_files && reg->auth_files[i]; i++)
		if (strv_push(&v, reg->auth_files[i]) < 0) {
			strv_free(v);
			v = NULL;
		}
	if (!v)
		return -ENOMEM;
	strv_free(reg->auth_files);
	reg->auth_files = v;
	return 0;
}

/* Reads the recipe: the file or the built-in one. Return: 0, -EINVAL (a bad --install: 78),
 * other -errno. Logs on failure. */
static int load_recipe(const struct build_request *req, char **text, size_t *len)
{
	const char *bad;
	int r;

	if (req->file) {
		r = read_file_at(AT_FDCWD, req->file, CF_MAX_FILE + 1, text, len);
		if (r == -EFBIG)
			return log_error_errno(r, "%s: larger than %u bytes", req->file, CF_MAX_FILE);
		if (r < 0)
			return log_error_errno(r, "Failed to read '%s': %m", req->file);
		return 0;
	}
	r = recipe_default(req->install, text, &bad);
	if (r == -EINVAL)
		return log_error_errno(r, "--install '%s': not a Debian package name (a-z 0-9 + - ., "
				       "optionally =VERSION), or more than %u packages", bad ? bad : "", RECIPE_MAX_INSTALL);
	if (r < 0)
		return log_error_errno(r, "Out of memory");
	*len = strlen(*text);
	return 0;
}

void ctx_state_done(struct ctx_state *cs)
{
	for (size_t i = 0; i < cs->n_copies; i++)
		free(cs->copies[i]);
	free(cs->copies);
	context_done(&cs->ctx);
	*cs = (struct ctx_state){ 0 };
}

int build_load_context(const char *context, const struct cf_recipe *rc, bool hash, struct ctx_state *cs)
{
	_cleanup_close_ int dfd = -1;
	struct ignore ig = { 0 };
	uint64_t budget = CTX_MAX_BYTES;
	size_t n_copy = 0;
	int r;

	*cs = (struct ctx_state){ 0 };
	for (size_t i = 0; i < rc->n_steps; i++)
		n_copy += rc->steps[i].kind == CF_COPY;
	if (n_copy == 0)
		return 0; /* the context is not read at all */
	dfd = open(context, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return log_error_errno(-errno, "Failed to open the build context '%s': %m", context);
	r = context_load_ignore(dfd, &ig);
	if (r >= 0)
		r = context_scan(dfd, &ig, &cs->ctx);
	ignore_done(&ig);
	if (r < 0)
		return r;
	cs->copies = calloc(n_copy, sizeof(bool *));
	if (!cs->copies)
		return log_error_errno(-ENOMEM, "Out of memory");
	for (size_t i = 0; i < rc->n_steps && r >= 0; i++) {
		const char *missing = NULL;
		bool *take;

		if (rc->steps[i].kind != CF_COPY)
			continue;
		take = calloc(cs->ctx.n + 1, sizeof(bool));
		if (!take)
			return log_error_errno(-ENOMEM, "Out of memory");
		cs->copies[cs->n_copies++] = take;
		r = context_select(&cs->ctx, rc->steps[i].sources, take, &missing);
		if (r == -ENOENT)
			return log_error_errno(r, "line %u: COPY source '%s' is not in the build context '%s' (or is "
					       "left out by its ignore file)", rc->steps[i].line, missing, context);
		if (r >= 0 && hash)
			r = context_hash_files(dfd, &cs->ctx, take, &budget);
	}
	return r;
}

char *build_dir_new(struct store *s)
{
	char *dir;

	if (asprintf(&dir, "%s/tmp/build-XXXXXX", s->root) < 0) {
		log_error_errno(-ENOMEM, "Out of memory");
		return NULL;
	}
	if (!mkdtemp(dir)) {
		log_error_errno(-errno, "Failed to create a build directory under '%s': %m", s->root);
		free(dir);
		return NULL;
	}
	return dir;
}

int build_state_file(const char *tag, const char *suffix, const char *what)
{
	_cleanup_free_ char *dir = homedir_aisb(hostenv_get, HOMEDIR_STATE), *file = NULL;
	int fd;

	if (!dir || mkdir_p(dir, 0700) < 0 || asprintf(&file, "%s/build-%s.%s", dir, tag, suffix) < 0) {
		log_warn("no build %s: cannot create the state directory", what);
		return -1;
	}
	fd = open(file, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		log_warn_errno(-errno, "no build %s: cannot create '%s': %m", what, file);
	else
		log_info("%s: %s", what, file);
	return fd;
}

static void print_argv(FILE *f, char *const *v)
{
	for (size_t i = 0; v && v[i]; i++)
		fprintf(f, "%s'%s'", i ? " " : "", v[i]);
}

static void print_step(const struct cf_step *s)
{
	if (s->kind == CF_RUN) {
		printf(" [user %s, cwd %s] ", s->user ? s->user : "root", s->workdir);
		print_argv(stdout, s->argv);
	} else if (s->kind == CF_COPY) {
		putchar(' ');
		print_argv(stdout, s->sources);
		printf(" -> '%s'", s->dest);
		if (s->chmod != (mode_t)-1)
			printf(" mode %04o", (unsigned)s->chmod);
	} else {
		printf(" '%s'", s->workdir);
	}
	putchar('\n');
}

/* --dry-run: what would be built, from what, with which network; build args by name only. */
static void print_steps(const struct build_request *o, const struct cf_recipe *rc, size_t n_entries)
{
	bool net = o->allow || o->allow_files || o->add_hosts;

	printf("builder: %s\n", o->builder == BUILDER_PODMAN ? "podman" : "native");
	printf("recipe: %s\n", build_recipe_name(o));
	printf("from: %s (line %u)\n", rc->from, rc->from_line);
	if (o->tag)
		printf("tag: %s\n", o->tag);
	printf("context: %s (%zu entries)\n", o->context, n_entries);
	for (size_t i = 0; o->build_args && o->build_args[i]; i++)
		printf("build-arg: %.*s\n", (int)strcspn(o->build_args[i], "="), o->build_args[i]); /* names only */
	if (o->builder == BUILDER_PODMAN && !net)
		printf("network: podman's, not aisb's gate\n");
	else if (!net)
		printf("network: none for RUN (loopback only)%s%s\n", o->file ? "" : "; the built-in recipe needs ",
		       o->file ? "" : RECIPE_ALLOW_HINT);
	else
		printf("network: the gate, for the entries below\n");
	for (size_t i = 0; o->allow && o->allow[i]; i++)
		printf("allow: %s\n", o->allow[i]);
	for (size_t i = 0; o->allow_files && o->allow_files[i]; i++)
		printf("allow-file: %s\n", o->allow_files[i]);
	for (size_t i = 0; o->add_hosts && o->add_hosts[i]; i++)
		printf("add-host: %s\n", o->add_hosts[i]);
	for (size_t i = 0; i < rc->n_steps; i++) {
		printf("step %zu/%zu line %u %s", i + 1, rc->n_steps, rc->steps[i].line, cf_kind_name(rc->steps[i].kind));
		print_step(&rc->steps[i]);
	}
}

/* The build's network plan from --allow, --allow-file and --add-host: NULL (no network) when
 * none is given. Builds take names only: an IP or CIDR entry needs pasta, which builds do not
 * start. Return: 0, or an exit code (78 for a bad entry). Logs on failure. */
static int build_netplan(const struct build_request *o, struct net_plan **out)
{
	struct aisb_settings s = { .net = NET_ALLOW, .net_source = SRC_FLAG, .allows = (char **)o->allow,
				   .allow_files = (char **)o->allow_files, .add_hosts = (char **)o->add_hosts };
	int r;

	*out = NULL;
	if (!o->allow && !o->allow_files && !o->add_hosts)
		return 0;
	r = netplan_resolve(&s, out);
	if (r != 0)
		return r;
	if ((*out)->pasta) {
		log_error("build: IP and CIDR --allow entries need pasta, which aisb build does not start; allow "
			  "names (with --add-host NAME=IP to pin an address)");
		netplan_free(*out);
		*out = NULL;
		return AISB_EXIT_POLICY;
	}
	return 0;
}

/* The native builder cannot run here (@why: no user namespaces, no overlay in one). Podman
 * builds instead only when the builder was not chosen and no allowlist was given, with RUN
 * offline (--network=none) as the native builder's would be; said loudly. Otherwise 77 with
 * the reason. Returns an exit code. */
static int native_unavailable(const struct build_request *o, const char *why, const struct net_plan *np,
			      const char *text, size_t len, const struct containerfile *cf, const struct cf_recipe *rc)
{
	_cleanup_free_ char *podman = NULL;

	if (o->builder_explicit) {
		log_error("the native builder cannot run here: %s (see 'aisb doctor'; --builder podman builds "
			  "outside aisb's sandbox)", why);
		return AISB_EXIT_ENFORCE;
	}
	if (np) {
		log_error("the native builder cannot run here: %s; --allow, --allow-file and --add-host need it "
			  "or a chosen --builder podman (which puts its RUN steps behind the same gate)", why);
		return AISB_EXIT_ENFORCE;
	}
	podman = podman_find_program(hostenv_get("PATH"), "podman");
	if (!podman) {
		log_error("the native builder cannot run here: %s; podman, the fallback builder, is not installed "
			  "(apt-get install podman runc)", why);
		return AISB_EXIT_ENFORCE;
	}
	log_warn("the native builder cannot run here: %s; building with podman instead, RUN steps offline "
		 "(--builder native refuses instead)", why);
	return build_podman(o, text, len, cf, rc, NULL); /* no plan: --network=none */
}

/* After the recipe parsed and resolved: the network plan, then preview or build with the
 * builder asked for (or its fallback). Returns an exit code. */
static int build_resolved(const struct build_request *o, const char *text, size_t len, const struct containerfile *cf,
			  const struct cf_recipe *rc)
{
	struct net_plan *np = NULL;
	struct ctx_state cs;
	char why[256];
	int r;

	if ((r = build_netplan(o, &np)) != 0)
		return r;
	if (o->builder == BUILDER_PODMAN && !o->dry_run) {
		r = build_podman(o, text, len, cf, rc, np);
		goto out;
	}
	r = build_load_context(o->context, rc, false, &cs);
	if (r >= 0 && o->dry_run)
		print_steps(o, rc, cs.ctx.n);
	ctx_state_done(&cs);
	if (r < 0) {
		r = r == -ENOENT || r == -EINVAL || r == -EFBIG || r == -ENOTDIR ? AISB_EXIT_POLICY : AISB_EXIT_FAILED;
		goto out;
	}
	if (o->dry_run)
		r = 0;
	else if (native_probe(why, sizeof(why)) < 0)
		r = native_unavailable(o, why, np, text, len, cf, rc);
	else
		r = build_native(o, cf, rc, np);
out:
	netplan_free(np);
	return r;
}

int build_run(const struct build_request *o)
{
	_cleanup_free_ char *text = NULL;
	struct containerfile cf = { 0 };
	struct cf_recipe rc = { 0 };
	struct cf_error err;
	size_t len = 0;
	int r;

	r = load_recipe(o, &text, &len);
	if (r < 0)
		return r == -EINVAL ? AISB_EXIT_POLICY : AISB_EXIT_FAILED;
	r = cf_parse(text, len, &cf, &err);
	if (r >= 0 && !o->print_containerfile)
		r = cf_resolve(&cf, o->build_args, NULL, &rc, &err);
	if (r < 0) {
		r = build_report_recipe(build_recipe_name(o), r, &err);
	} else if (o->print_containerfile) {
		/* prints the recipe that would be built, checked first; touches nothing */
		fwrite(text, 1, len, stdout);
		r = fflush(stdout) == 0 ? 0 : AISB_EXIT_FAILED;
	} else {
		r = build_resolved(o, text, len, &cf, &rc);
	}
	cf_recipe_done(&rc);
	cf_done(&cf);
	return r;
}
