// SPDX-License-Identifier: GPL-2.0-or-later
/* cmd-images.c — `aisb images`, `aisb rmi REF`, `aisb inspect REF|ID` */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <json-c/json.h>

#include "cli/commands.h"
#include "cli/flags.h"
#include "cli/hostenv.h"
#include "rootfs/image.h"
#include "util/log.h"
#include "util/util.h"

static int open_store(struct image_opts *o, struct store **s)
{
	if (image_opts_init(o, hostenv_get) < 0)
		return AISB_EXIT_POLICY;
	if (store_open(o->store_root, s) < 0)
		return AISB_EXIT_FAILED;
	return 0;
}

static void format_size(uint64_t b, char buf[32])
{
	if (b >= 1000ULL * 1000 * 1000)
		snprintf(buf, 32, "%.1f GB", (double)b / 1e9);
	else if (b >= 1000ULL * 1000)
		snprintf(buf, 32, "%.1f MB", (double)b / 1e6);
	else
		snprintf(buf, 32, "%.1f kB", (double)b / 1e3);
}

static void format_time(int64_t t, char buf[32])
{
	time_t tt = (time_t)t;
	strftime(buf, 32, "%Y-%m-%dT%H:%M:%SZ", gmtime(&tt));
}

/* A name's repository and tag, as podman splits them: the tag follows the last ':' after the
 * last '/'; a digest-pinned or untagged name has "<none>". */
static void split_name(const char *name, char *repo, size_t n, const char **tag)
{
	const char *slash = strrchr(name, '/'), *colon = strrchr(name, ':');

	if (strchr(name, '@') || !colon || (slash && colon < slash)) {
		snprintf(repo, n, "%s", name);
		*tag = "<none>";
		return;
	}
	snprintf(repo, n, "%.*s", (int)(colon - name), name);
	*tag = colon + 1;
}

/* Expands a podman-style --format template for one image: {{.Repository}} {{.Tag}} {{.Name}}
 * {{.Digest}} {{.ID}} (the digest's first 12 hex digits, as podman shortens IDs) {{.Size}}
 * {{.PinnedAt}}; "\t" and "\n" are a tab and a newline, as podman reads them. Return: 0, or
 * -EINVAL naming the unknown field in @bad. Does not log. */
static int expand_format(const char *fmt, const struct store_ref *r, FILE *f, const char **bad)
{
	char repo[512], size[32], when[32], id[13];
	const char *tag, *hex = strchr(r->digest, ':');

	split_name(r->name, repo, sizeof(repo), &tag);
	format_size(r->size, size);
	format_time(r->resolved_at, when);
	snprintf(id, sizeof(id), "%s", hex ? hex + 1 : r->digest);
	for (const char *p = fmt; *p;) {
		static const char *const keys[] = { "Repository", "Tag", "Name", "Digest", "ID", "Size", "PinnedAt" };
		const char *vals[] = { repo, tag, r->name, r->digest, id, size, when };
		const char *end;
		bool found = false;

		if (p[0] == '\\' && (p[1] == 't' || p[1] == 'n')) {
			fputc(p[1] == 't' ? '\t' : '\n', f);
			p += 2;
			continue;
		}
		if (strncmp(p, "{{", 2) != 0 || !(end = strstr(p, "}}"))) {
			fputc(*p++, f);
			continue;
		}
		for (size_t k = 0; k < ELEMENTSOF(keys); k++) {
			char want[32];
			snprintf(want, sizeof(want), "{{.%s}}", keys[k]);
			if ((size_t)(end + 2 - p) == strlen(want) && strncmp(p, want, strlen(want)) == 0) {
				fputs(vals[k], f);
				found = true;
			}
		}
		if (!found) {
			*bad = p;
			return -EINVAL;
		}
		p = end + 2;
	}
	fputc('\n', f);
	return 0;
}

static json_object *image_json(const struct store_ref *r)
{
	json_object *o = json_object_new_object();
	char repo[512];
	const char *tag;

	split_name(r->name, repo, sizeof(repo), &tag);
	json_object_object_add(o, "Name", json_object_new_string(r->name));
	json_object_object_add(o, "Repository", json_object_new_string(repo));
	json_object_object_add(o, "Tag", json_object_new_string(tag));
	json_object_object_add(o, "Digest", json_object_new_string(r->digest));
	json_object_object_add(o, "Size", json_object_new_int64((int64_t)r->size));
	json_object_object_add(o, "PinnedAt", json_object_new_int64(r->resolved_at));
	return o;
}

static void images_help(void)
{
	printf("usage: aisb images [-a|--all] [-q|--quiet] [--format TEMPLATE|json]\n"
	       "  lists the images in the store: name, pinned digest, unpacked size, when pinned\n"
	       "  -a, --all        also the build cache's internal entries (" BUILD_CACHE_PREFIX "HASH)\n"
	       "  -q, --quiet      only the digests, one per line\n"
	       "      --format T   a podman-style template per image: {{.Repository}} {{.Tag}} {{.Name}}\n"
	       "                   {{.Digest}} {{.ID}} {{.Size}} {{.PinnedAt}}, \\t and \\n; or 'json'\n");
}

int cmd_images(int argc, char **argv)
{
	struct image_opts o;
	struct store *s = NULL;
	struct store_ref *refs = NULL;
	const char *format = NULL, *bad = NULL;
	json_object *arr = NULL;
	bool all = false, quiet = false;
	size_t n = 0;
	int r;
	struct cli_args args;
	const struct cli_flag *f;
	const char *val;
	enum cli_arg k;

	cli_args_init(&args, "images", argc, argv);
	while ((k = cli_args_next(&args, &f, &val)) != CLI_ARG_END) {
		if (k == CLI_ARG_BAD)
			return AISB_EXIT_USAGE;
		if (k == CLI_ARG_WORD)
			return log_error("images takes no image names (see 'aisb images --help')"), AISB_EXIT_USAGE;
		if (cli_flag_is(f, "all"))
			all = true;
		else if (cli_flag_is(f, "quiet"))
			quiet = true;
		else if (cli_flag_is(f, "format"))
			format = val;
		else if (cli_flag_is(f, "help")) {
			images_help();
			return 0;
		} else
			return cli_flag_unhandled("images", f);
	}
	if (quiet && format)
		return log_error("images: --quiet and --format are two formats: pick one"), AISB_EXIT_USAGE;
	r = open_store(&o, &s);
	if (r == 0 && store_ref_list(s, &refs, &n) < 0)
		r = AISB_EXIT_FAILED;
	if (r == 0 && format && streq(format, "json"))
		arr = json_object_new_array();
	if (r == 0 && !quiet && !format)
		printf("%-50s  %-71s  %10s  %s\n", "NAME", "DIGEST", "SIZE", "PINNED-AT");
	for (size_t i = 0; i < n; i++) {
		char size[32], when[32];

		if (r != 0 || (!all && cli_is_build_cache(refs[i].name))) {
			store_ref_done(&refs[i]);
			continue;
		}
		if (arr)
			json_object_array_add(arr, image_json(&refs[i]));
		else if (format && expand_format(format, &refs[i], stdout, &bad) < 0) {
			log_error("images: --format: unknown field at '%.40s' (known: {{.Repository}} {{.Tag}} "
				  "{{.Name}} {{.Digest}} {{.ID}} {{.Size}} {{.PinnedAt}})", bad);
			r = AISB_EXIT_USAGE;
		}
		else if (quiet)
			printf("%s\n", refs[i].digest);
		else if (!format) {
			format_size(refs[i].size, size);
			format_time(refs[i].resolved_at, when);
			printf("%-50s  %-71s  %10s  %s\n", refs[i].name, refs[i].digest, size, when);
		}
		store_ref_done(&refs[i]);
	}
	if (arr) {
		printf("%s\n", json_object_to_json_string_ext(arr, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE));
		json_object_put(arr);
	}
	free(refs);
	store_free(s);
	image_opts_done(&o);
	return r;
}

int cmd_rmi(int argc, char **argv)
{
	struct image_opts o;
	struct store *s = NULL;
	struct cli_args args;
	const struct cli_flag *f;
	const char *val;
	enum cli_arg k;
	int n = 1, r, ret = 0;
	uint64_t freed = 0;

	cli_args_init(&args, "rmi", argc, argv);
	while ((k = cli_args_next(&args, &f, &val)) != CLI_ARG_END) {
		if (k == CLI_ARG_BAD)
			return AISB_EXIT_USAGE;
		if (k == CLI_ARG_WORD) {
			argv[n++] = (char *)val; /* the words, in order, over the words already read */
			continue;
		}
		if (!cli_flag_is(f, "help"))
			return cli_flag_unhandled("rmi", f);
		printf("usage: aisb rmi REF...\n\nRemoves the images' pins, then every blob and tree no pin uses.\n"
		       "An image a running sandbox uses is kept.\n\n  -h, --help  this help\n");
		return 0;
	}
	if (n < 2)
		return log_error("usage: aisb rmi REF..."), AISB_EXIT_USAGE;
	argc = n;
	r = open_store(&o, &s);
	for (int i = 1; r == 0 && i < argc; i++) {
		struct oci_ref ref;
		if (oci_ref_parse(argv[i], &ref) < 0) {
			log_error("'%s' is not an image reference", argv[i]);
			ret = AISB_EXIT_POLICY;
			continue;
		}
		if (store_ref_remove(s, ref.name) < 0) {
			log_error("no image '%s' in the store", ref.name);
			if (!ret)
				ret = AISB_EXIT_FAILED;
		} else {
			printf("untagged %s\n", ref.name);
		}
		oci_ref_done(&ref);
	}
	/* drop whatever no pin refers to any more; trees in use by a running session stay */
	if (r == 0 && store_gc(s, &freed) < 0 && !ret)
		ret = AISB_EXIT_FAILED;
	store_free(s);
	image_opts_done(&o);
	return r ? r : ret;
}

static json_object *strv_json(char **v)
{
	json_object *a;
	if (!v)
		return NULL;
	a = json_object_new_array();
	for (size_t i = 0; v[i]; i++)
		json_object_array_add(a, json_object_new_string(v[i]));
	return a;
}

int cli_inspect_image(const char *ref, bool json)
{
	struct image_opts o;
	struct store *s = NULL;
	struct store_ref pin;
	struct oci_image_config cfg;
	json_object *j, *c;
	_cleanup_free_ char *rootfs = NULL;
	char when[32];
	int r;

	(void)json; /* images are always shown as JSON */
	r = open_store(&o, &s);
	if (r) {
		image_opts_done(&o);
		return r;
	}
	r = image_find_pin(s, ref, &pin);
	if (r < 0) {
		store_free(s);
		image_opts_done(&o);
		return -ENOENT;
	}
	if (image_load_config(s, &pin, &cfg) < 0) {
		store_ref_done(&pin);
		store_free(s);
		image_opts_done(&o);
		return AISB_EXIT_FAILED;
	}
	rootfs = store_rootfs_path(s, pin.rootfs_id);
	format_time(pin.resolved_at, when);
	j = json_object_new_object();
	json_object_object_add(j, "name", json_object_new_string(pin.name));
	json_object_object_add(j, "digest", json_object_new_string(pin.digest));
	json_object_object_add(j, "platform", json_object_new_string(pin.platform ?: ""));
	json_object_object_add(j, "pinned_at", json_object_new_string(when));
	json_object_object_add(j, "config_digest", json_object_new_string(pin.config));
	json_object_object_add(j, "rootfs", json_object_new_string(rootfs ?: ""));
	json_object_object_add(j, "size", json_object_new_int64((int64_t)pin.size));
	c = json_object_new_object();
	if (cfg.env)
		json_object_object_add(c, "Env", strv_json(cfg.env));
	if (cfg.working_dir)
		json_object_object_add(c, "WorkingDir", json_object_new_string(cfg.working_dir));
	if (cfg.user)
		json_object_object_add(c, "User", json_object_new_string(cfg.user));
	if (cfg.entrypoint)
		json_object_object_add(c, "Entrypoint", strv_json(cfg.entrypoint));
	if (cfg.cmd)
		json_object_object_add(c, "Cmd", strv_json(cfg.cmd));
	if (cfg.labels)
		json_object_object_add(c, "Labels", strv_json(cfg.labels));
	json_object_object_add(j, "config", c);
	printf("%s\n", json_object_to_json_string_ext(j, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(j);
	oci_config_done(&cfg);
	store_ref_done(&pin);
	store_free(s);
	image_opts_done(&o);
	return 0;
}
