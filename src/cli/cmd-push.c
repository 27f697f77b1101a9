// SPDX-License-Identifier: GPL-2.0-or-later
/* cmd-push.c — `aisb push REF DEST`, `aisb save REF -o FILE`, `aisb load -i FILE` */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "build/compress.h"
#include "build/push-job.h"
#include "cli/commands.h"
#include "cli/flags.h"
#include "cli/hostenv.h"
#include "cli/regflags.h"
#include "rootfs/image.h"
#include "rootfs/layout.h"
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

/* `aisb push --help` */
static void push_usage(void)
{
	printf("usage: aisb push [--tls-verify=false] [--cert-dir DIR] [--authfile FILE]\n"
	       "                 [--compression-format gzip|zstd [--compression-level N]] [-q] REF DEST\n"
	       "  REF: an image in the store (aisb images); DEST: HOST[:PORT]/NAME[:TAG]\n"
	       "  --compression-format: compress REF's uncompressed layers on the way (a new\n"
	       "  manifest); without it the layers go as stored\n"
	       "  prints the pushed manifest digest (REF's unless a layer was compressed)\n");
}

/* One flag of push's table into @q and @io. Return: 0, 1 (--help: printed, exit 0), or an exit
 * code after logging. */
static int push_flag(struct push_request *q, struct image_opts *io, const struct cli_flag *f, const char *val)
{
	int rf;

	if ((rf = regflag_by_name(f->name)) >= 0) {
		if (regflag_apply(&io->reg, (enum regflag)rf, val) < 0)
			return AISB_EXIT_USAGE;
	} else if (cli_flag_is(f, "compression-format")) {
		if (layer_compression_parse(val, &q->comp) < 0 || q->comp == LAYER_COMP_NONE)
			return log_error("--compression-format '%s': use gzip or zstd (without the flag the "
					 "layers go as stored)", val), AISB_EXIT_USAGE;
	} else if (cli_flag_is(f, "compression-level")) {
		if ((q->level = layer_compression_level_parse(val)) < 0)
			return log_error("--compression-level '%s': a number, 1-9 for gzip, 1-19 for zstd", val),
			       AISB_EXIT_USAGE;
	} else if (cli_flag_is(f, "quiet")) {
		io->quiet = true;
		io->reg.progress = false;
	} else if (cli_flag_is(f, "verbose")) {
		log_set_level(LOG_LVL_DEBUG);
	} else if (cli_flag_is(f, "help")) {
		push_usage();
		return 1;
	} else {
		return cli_flag_unhandled("push", f);
	}
	return 0;
}

/* argv into @q (REF, DEST, the compression) and @io. Return: 0, 1 (--help), or an exit code
 * after logging. */
static int push_args(struct push_request *q, struct image_opts *io, int argc, char **argv)
{
	struct cli_args args;
	const struct cli_flag *f;
	const char *val, *w[2] = { NULL, NULL };
	enum cli_arg k;
	size_t nw = 0;
	int r;

	cli_args_init(&args, "push", argc, argv);
	while ((k = cli_args_next(&args, &f, &val)) != CLI_ARG_END) {
		if (k == CLI_ARG_BAD)
			return AISB_EXIT_USAGE;
		if (k == CLI_ARG_WORD) {
			if (nw < ELEMENTSOF(w))
				w[nw] = val;
			nw++;
		} else if ((r = push_flag(q, io, f, val)) != 0) {
			return r;
		}
	}
	if (q->level >= 0 && q->comp == LAYER_COMP_MAX)
		return log_error("--compression-level needs --compression-format gzip|zstd"), AISB_EXIT_USAGE;
	if (q->comp != LAYER_COMP_MAX && (q->level = layer_compression_level(q->comp, q->level)) < 0)
		return log_error("--compression-level does not fit --compression-format %s (gzip 1-9, zstd 1-19)",
				 layer_compression_name(q->comp)), AISB_EXIT_USAGE;
	if (nw != 2)
		return log_error("push takes an image and a destination: aisb push REF HOST[:PORT]/NAME[:TAG]"),
		       AISB_EXIT_USAGE;
	q->ref = w[0];
	q->dest = w[1];
	return 0;
}

int cmd_push(int argc, char **argv)
{
	struct image_opts io;
	struct push_request q = { .comp = LAYER_COMP_MAX, .level = -1, .io = &io }; /* MAX: as stored */
	int ex;

	if (begin(&io) < 0)
		return AISB_EXIT_POLICY;
	ex = push_args(&q, &io, argc, argv);
	if (ex == 1)
		ex = 0; /* --help */
	else if (ex == 0)
		ex = push_job_run(&q);
	image_opts_done(&io);
	return ex;
}

/* What `aisb load` pinned: stdout each image's digest once; stderr each name it was pinned under. */
static void print_loaded(const struct store_ref *pins, size_t n_pins, bool quiet)
{
	for (size_t i = 0; i < n_pins; i++) {
		bool seen = false;
		for (size_t j = 0; j < i; j++)
			seen |= streq(pins[j].digest, pins[i].digest);
		if (!seen)
			printf("%s\n", pins[i].digest);
		if (!quiet)
			log_info("loaded %s: %s", pins[i].name, pins[i].digest);
	}
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
		if ((ex = push_job_open_pin(&o, ref, &s, &pin)) != 0)
			goto out;
		r = layout_save(s, &pin, file);
	} else {
		if (store_open(o.store_root, &s) < 0)
			goto out;
		r = image_load_archive(s, file, &o, &pins, &n_pins);
		if (r == 0)
			print_loaded(pins, n_pins, o.quiet);
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
