// SPDX-License-Identifier: GPL-2.0-or-later
/* cmd-push.c — `aisb push REF DEST`, `aisb save REF -o FILE`, `aisb load -i FILE` */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "build/compress.h"
#include "build/recompress.h"
#include "cli/commands.h"
#include "cli/flags.h"
#include "cli/hostenv.h"
#include "cli/regflags.h"
#include "rootfs/image.h"
#include "rootfs/layout.h"
#include "rootfs/push.h"
#include "util/log.h"
#include "util/util.h"

/* The options from the environment. Logs on failure. */
static int begin(struct image_opts *o)
{
	if (image_opts_init(o, hostenv_get) < 0) {
		image_opts_done(o);
		return -EINVAL;
	}
	return 0;
}

/* The store and the pin @refstr names (as `aisb images` lists it). Return: 0 or an exit code. */
static int open_pin(struct image_opts *o, const char *refstr, struct store **s, struct store_ref *pin)
{
	int r;

	if (store_open(o->store_root, s) < 0)
		return AISB_EXIT_FAILED;
	r = image_find_pin(*s, refstr, pin);
	if (r == -EINVAL)
		return log_error("'%s' is not an image reference", refstr), AISB_EXIT_POLICY;
	if (r < 0)
		return log_error("no image '%s' in the store (aisb images lists them; aisb pull or aisb build makes "
				 "them)", refstr), AISB_EXIT_FAILED;
	return 0;
}

/* The repository of @pin on @dest's registry, for a cross-repository mount, or NULL. */
static char *mount_source(const struct store_ref *pin, const struct oci_ref *dest)
{
	struct oci_ref src;
	char *repo = NULL;

	if (oci_ref_parse(pin->name, &src) < 0)
		return NULL;
	if (src.transport == OCI_TRANSPORT_REGISTRY && streq(src.registry, dest->registry) &&
	    !streq(src.repository, dest->repository))
		repo = strdup(src.repository);
	oci_ref_done(&src);
	return repo;
}

enum { OPT_COMP_FORMAT = 0x200, OPT_COMP_LEVEL };

int cmd_push(int argc, char **argv)
{
	struct image_opts o;
	struct store *s = NULL;
	struct store_ref pin = { 0 };
	struct oci_ref dest = { 0 };
	struct push_stats st;
	_cleanup_free_ char *from = NULL, *man = NULL, *pinman = NULL;
	enum layer_compression comp = LAYER_COMP_MAX; /* MAX: as stored */
	struct cli_args args;
	const struct cli_flag *f;
	const char *val, *w[2] = { NULL, NULL };
	enum cli_arg k;
	size_t nw = 0, man_len = 0, pinman_len = 0;
	unsigned n_comp = 0;
	int r, rf, level = -1, ex = AISB_EXIT_FAILED;

	if (begin(&o) < 0)
		return AISB_EXIT_POLICY;
	cli_args_init(&args, "push", argc, argv);
	while ((k = cli_args_next(&args, &f, &val)) != CLI_ARG_END) {
		if (k == CLI_ARG_BAD) {
			ex = AISB_EXIT_USAGE;
			goto out;
		}
		if (k == CLI_ARG_WORD) {
			if (nw < ELEMENTSOF(w))
				w[nw] = val;
			nw++;
		} else if ((rf = regflag_by_name(f->name)) >= 0) {
			if (regflag_apply(&o.reg, (enum regflag)rf, val) < 0) {
				ex = AISB_EXIT_USAGE;
				goto out;
			}
		} else if (cli_flag_is(f, "compression-format")) {
			if (layer_compression_parse(val, &comp) < 0 || comp == LAYER_COMP_NONE) {
				log_error("--compression-format '%s': use gzip or zstd (without the flag the "
					  "layers go as stored)", val);
				ex = AISB_EXIT_USAGE;
				goto out;
			}
		} else if (cli_flag_is(f, "compression-level")) {
			if ((level = layer_compression_level_parse(val)) < 0) {
				log_error("--compression-level '%s': a number, 1-9 for gzip, 1-19 for zstd", val);
				ex = AISB_EXIT_USAGE;
				goto out;
			}
		} else if (cli_flag_is(f, "quiet")) {
			o.quiet = true;
			o.reg.progress = false;
		} else if (cli_flag_is(f, "verbose")) {
			log_set_level(LOG_LVL_DEBUG);
		} else if (cli_flag_is(f, "help")) {
			printf("usage: aisb push [--tls-verify=false] [--cert-dir DIR] [--authfile FILE]\n"
			       "                 [--compression-format gzip|zstd [--compression-level N]] [-q] REF DEST\n"
			       "  REF: an image in the store (aisb images); DEST: HOST[:PORT]/NAME[:TAG]\n"
			       "  --compression-format: compress REF's uncompressed layers on the way (a new\n"
			       "  manifest); without it the layers go as stored\n"
			       "  prints the pushed manifest digest (REF's unless a layer was compressed)\n");
			ex = 0;
			goto out;
		} else {
			ex = cli_flag_unhandled("push", f);
			goto out;
		}
	}
	if (level >= 0 && comp == LAYER_COMP_MAX) {
		log_error("--compression-level needs --compression-format gzip|zstd");
		ex = AISB_EXIT_USAGE;
		goto out;
	}
	if (comp != LAYER_COMP_MAX && (level = layer_compression_level(comp, level)) < 0) {
		log_error("--compression-level does not fit --compression-format %s (gzip 1-9, zstd 1-19)",
			  layer_compression_name(comp));
		ex = AISB_EXIT_USAGE;
		goto out;
	}
	if (nw != 2) {
		log_error("push takes an image and a destination: aisb push REF HOST[:PORT]/NAME[:TAG]");
		ex = AISB_EXIT_USAGE;
		goto out;
	}
	if (oci_ref_parse(w[1], &dest) < 0 || dest.transport != OCI_TRANSPORT_REGISTRY || dest.digest ||
	    streq(dest.registry, IMAGE_LOCAL_REGISTRY)) {
		log_error("'%s' is not a registry destination (HOST[:PORT]/NAME[:TAG], without a digest)",
			  w[1]);
		ex = AISB_EXIT_POLICY;
		goto out;
	}
	if ((ex = open_pin(&o, w[0], &s, &pin)) != 0)
		goto out;
	if (comp != LAYER_COMP_MAX) {
		/* the uncompressed layers compressed into new blobs, named by a new manifest */
		r = store_blob_read(s, pin.digest, OCI_JSON_MAX, &pinman, &pinman_len);
		if (r < 0) {
			log_error_errno(r, "%s: manifest %s is not in the store: %m", pin.name, pin.digest);
			goto out;
		}
		r = layer_recompress_manifest(s, pinman, pinman_len, comp, level, &man, &man_len, &n_comp);
		if (r < 0) {
			ex = r == -EINVAL ? AISB_EXIT_POLICY : AISB_EXIT_FAILED;
			goto out;
		}
		if (!o.quiet)
			log_info("%s: %u uncompressed layer(s) compressed with %s%s", pin.name, n_comp,
				 layer_compression_name(comp), n_comp ? "" : " (none was: the layers go as stored)");
	}
	from = mount_source(&pin, &dest);
	r = push_image(s, &pin, &dest, from, man, man_len, &o.reg, &st);
	if (r < 0) {
		ex = r == -EINVAL ? AISB_EXIT_POLICY : AISB_EXIT_FAILED;
		goto out;
	}
	printf("%s\n", st.digest);
	if (!o.quiet)
		log_info("%s: pushed %s as %s: %u blob(s) sent (%.1f MB), %u already there, %u mounted from %s",
			 dest.name, pin.name, st.digest, st.sent, (double)st.bytes / 1e6, st.present, st.mounted,
			 from ? from : "-");
	log_debug("%s: %u registry request(s)", dest.name, st.requests);
	ex = 0;
out:
	store_ref_done(&pin);
	oci_ref_done(&dest);
	store_free(s);
	image_opts_done(&o);
	return ex;
}

/* save and load share their shape: one file flag (-o / -i), REF for save only. */
static int archive_cmd(int argc, char **argv, bool save)
{
	static const char save_usage[] =
		"usage: aisb save REF -o FILE\n"
		"  writes REF from the store as an OCI archive (an oci-layout tar): aisb load -i FILE,\n"
		"  skopeo and podman read it (oci-archive:FILE); prints the manifest digest\n";
	static const char load_usage[] =
		"usage: aisb load -i FILE\n"
		"  imports an OCI archive (aisb save, skopeo, podman) or a docker save archive (several\n"
		"  images with podman save -m) under every name it records, else as oci-archive:FILE;\n"
		"  prints each image's manifest digest\n";
	struct image_opts o;
	struct store *s = NULL;
	struct store_ref pin = { 0 }, *pins = NULL;
	struct cli_args args;
	const struct cli_flag *f;
	const char *file = NULL, *ref = NULL, *val;
	enum cli_arg k;
	size_t nw = 0, n_pins = 0;
	int r, ex = AISB_EXIT_FAILED;

	if (begin(&o) < 0)
		return AISB_EXIT_POLICY;
	cli_args_init(&args, save ? "save" : "load", argc, argv);
	while ((k = cli_args_next(&args, &f, &val)) != CLI_ARG_END) {
		if (k == CLI_ARG_BAD) {
			ex = AISB_EXIT_USAGE;
			goto out;
		}
		if (k == CLI_ARG_WORD) {
			ref = ref ? ref : val;
			nw++;
		} else if (cli_flag_is(f, "output") || cli_flag_is(f, "input")) {
			file = val;
		} else if (cli_flag_is(f, "quiet")) {
			o.quiet = true;
		} else if (cli_flag_is(f, "help")) {
			printf("%s", save ? save_usage : load_usage);
			ex = 0;
			goto out;
		} else {
			ex = cli_flag_unhandled(args.cmd, f);
			goto out;
		}
	}
	if (nw != (save ? 1 : 0) || !file || !*file) {
		log_error("%s", save ? "usage: aisb save REF -o FILE" : "usage: aisb load -i FILE");
		ex = AISB_EXIT_USAGE;
		goto out;
	}
	if (save) {
		if ((ex = open_pin(&o, ref, &s, &pin)) != 0)
			goto out;
		r = layout_save(s, &pin, file);
	} else {
		if (store_open(o.store_root, &s) < 0)
			goto out;
		r = image_load_archive(s, file, &o, &pins, &n_pins);
		/* stdout: each image's digest once; stderr: each name it was pinned under */
		for (size_t i = 0; r == 0 && i < n_pins; i++) {
			bool seen = false;
			for (size_t j = 0; j < i; j++)
				seen |= streq(pins[j].digest, pins[i].digest);
			if (!seen)
				printf("%s\n", pins[i].digest);
			if (!o.quiet)
				log_info("loaded %s: %s", pins[i].name, pins[i].digest);
		}
	}
	if (r < 0) {
		ex = r == -EINVAL ? AISB_EXIT_POLICY : AISB_EXIT_FAILED;
		goto out;
	}
	if (save)
		printf("%s\n", pin.digest);
	ex = 0;
out:
	for (size_t i = 0; i < n_pins; i++)
		store_ref_done(&pins[i]);
	free(pins);
	store_ref_done(&pin);
	store_free(s);
	image_opts_done(&o);
	return ex;
}

int cmd_save(int argc, char **argv)
{
	return archive_cmd(argc, argv, true);
}

int cmd_load(int argc, char **argv)
{
	return archive_cmd(argc, argv, false);
}
