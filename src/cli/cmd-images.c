// SPDX-License-Identifier: GPL-2.0-or-later
/* cmd-images.c — `aisb images`, `aisb rmi REF`, `aisb inspect REF|ID` */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <json-c/json.h>

#include "cli/commands.h"
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

int cmd_images(int argc, char **argv)
{
	struct image_opts o;
	struct store *s = NULL;
	struct store_ref *refs = NULL;
	size_t n = 0;
	int r;

	if (argc > 1 && (streq(argv[1], "--help") || streq(argv[1], "-h"))) {
		printf("usage: aisb images\n  lists pulled images: name, pinned digest, unpacked size, when pinned\n");
		return 0;
	}
	if (argc > 1)
		return log_error("images takes no arguments"), AISB_EXIT_USAGE;
	r = open_store(&o, &s);
	if (r == 0 && store_ref_list(s, &refs, &n) < 0)
		r = AISB_EXIT_FAILED;
	if (r == 0) {
		printf("%-50s  %-71s  %10s  %s\n", "NAME", "DIGEST", "SIZE", "PINNED-AT");
		for (size_t i = 0; i < n; i++) {
			char size[32], when[32];
			format_size(refs[i].size, size);
			format_time(refs[i].resolved_at, when);
			printf("%-50s  %-71s  %10s  %s\n", refs[i].name, refs[i].digest, size, when);
			store_ref_done(&refs[i]);
		}
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
	int r, ret = 0;
	uint64_t freed = 0;

	if (argc < 2)
		return log_error("usage: aisb rmi REF..."), AISB_EXIT_USAGE;
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

/* Session inspection belongs to issue 5 (`aisb inspect ID`).
 * HOOK(issue 5): replace this stub with the session inspector; it is reached for every argument
 * that is not a pulled image. Return the exit code. */
static int inspect_session(const char *id)
{
	return log_error("no image or session named '%s' (session inspection is not available yet)", id),
	       AISB_EXIT_FAILED;
}

int cmd_inspect(int argc, char **argv)
{
	struct image_opts o;
	struct store *s = NULL;
	struct store_ref pin;
	struct oci_image_config cfg;
	json_object *j, *c;
	_cleanup_free_ char *rootfs = NULL;
	char when[32];
	int r;

	if (argc != 2 || streq(argv[1], "--help") || streq(argv[1], "-h")) {
		printf("usage: aisb inspect REF|SESSION-ID\n");
		return argc == 2 ? 0 : AISB_EXIT_USAGE;
	}
	r = open_store(&o, &s);
	if (r) {
		image_opts_done(&o);
		return r;
	}
	r = image_find_pin(s, argv[1], &pin);
	if (r < 0) {
		store_free(s);
		image_opts_done(&o);
		return inspect_session(argv[1]);
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
