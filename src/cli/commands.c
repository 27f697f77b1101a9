// SPDX-License-Identifier: GPL-2.0-or-later
/* commands.c — the subcommand dispatch table */
#include <string.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "util/macro.h"

/* The flags each subcommand's parser accepts (cmd-*.c). tests/install/man-flags.sh checks both
 * ways against the subcommand's --help and its man page. */
#define HELP_FLAG { "help", 'h', CLI_VALUE_NONE, NULL, false }
static const struct cli_flag build_flags[] = {
	{ "file", 'f', CLI_VALUE_FILE, NULL, false },
	{ "tag", 't', CLI_VALUE_WORD, NULL, false },
	{ "build-arg", 0, CLI_VALUE_WORD, NULL, false },
	{ "install", 0, CLI_VALUE_WORD, NULL, false },
	{ "builder", 0, CLI_VALUE_CHOICE, "native podman", false },
	{ "allow", 0, CLI_VALUE_ALLOW, NULL, false },
	{ "allow-file", 0, CLI_VALUE_FILE, NULL, false },
	{ "add-host", 0, CLI_VALUE_WORD, NULL, false },
	{ "print-containerfile", 0, CLI_VALUE_NONE, NULL, false },
	{ "dry-run", 0, CLI_VALUE_NONE, NULL, false },
	{ "default", 0, CLI_VALUE_NONE, NULL, false },
	{ "compression-format", 0, CLI_VALUE_CHOICE, "gzip zstd none", false },
	{ "compression-level", 0, CLI_VALUE_WORD, NULL, false },
	{ "timestamp", 0, CLI_VALUE_WORD, NULL, false },
	{ "tls-verify", 0, CLI_VALUE_CHOICE, "true false", true },
	{ "cert-dir", 0, CLI_VALUE_DIR, NULL, false },
	{ "authfile", 0, CLI_VALUE_FILE, NULL, false },
	HELP_FLAG,
	{ NULL, 0, 0, NULL, false },
};
#define REGISTRY_FLAGS                                                                             \
	{ "tls-verify", 0, CLI_VALUE_CHOICE, "true false", true },                                 \
	{ "cert-dir", 0, CLI_VALUE_DIR, NULL, false },                                             \
	{ "authfile", 0, CLI_VALUE_FILE, NULL, false },                                            \
	{ "quiet", 'q', CLI_VALUE_NONE, NULL, false },                                             \
	{ "verbose", 'v', CLI_VALUE_NONE, NULL, false }
static const struct cli_flag pull_flags[] = { REGISTRY_FLAGS, HELP_FLAG, { NULL, 0, 0, NULL, false } };
static const struct cli_flag update_flags[] = {
	{ "check", 0, CLI_VALUE_NONE, NULL, false }, REGISTRY_FLAGS, HELP_FLAG, { NULL, 0, 0, NULL, false },
};
static const struct cli_flag push_flags[] = { REGISTRY_FLAGS,
					       { "compression-format", 0, CLI_VALUE_CHOICE, "gzip zstd", false },
					       { "compression-level", 0, CLI_VALUE_WORD, NULL, false },
					       HELP_FLAG, { NULL, 0, 0, NULL, false } };
static const struct cli_flag save_flags[] = {
	{ "output", 'o', CLI_VALUE_FILE, NULL, false }, HELP_FLAG, { NULL, 0, 0, NULL, false },
};
static const struct cli_flag load_flags[] = {
	{ "input", 'i', CLI_VALUE_FILE, NULL, false }, { "quiet", 'q', CLI_VALUE_NONE, NULL, false }, HELP_FLAG,
	{ NULL, 0, 0, NULL, false },
};
static const struct cli_flag images_flags[] = {
	{ "all", 'a', CLI_VALUE_NONE, NULL, false }, { "quiet", 'q', CLI_VALUE_NONE, NULL, false },
	{ "format", 0, CLI_VALUE_CHOICE, "json", false }, HELP_FLAG, { NULL, 0, 0, NULL, false },
};
static const struct cli_flag help_only_flags[] = { HELP_FLAG, { NULL, 0, 0, NULL, false } };
static const struct cli_flag ps_flags[] = {
	{ "all", 'a', CLI_VALUE_NONE, NULL, false }, { "json", 0, CLI_VALUE_NONE, NULL, false }, HELP_FLAG,
	{ NULL, 0, 0, NULL, false },
};
static const struct cli_flag inspect_flags[] = {
	{ "json", 0, CLI_VALUE_NONE, NULL, false }, HELP_FLAG, { NULL, 0, 0, NULL, false },
};
static const struct cli_flag clean_flags[] = {
	{ "all", 'a', CLI_VALUE_NONE, NULL, false }, { "volumes", 0, CLI_VALUE_WORD, NULL, true },
	{ "discard", 0, CLI_VALUE_NONE, NULL, false }, HELP_FLAG, { NULL, 0, 0, NULL, false },
};
static const struct cli_flag import_flags[] = {
	{ "target", 0, CLI_VALUE_WORD, NULL, false }, { "import-uncommitted", 0, CLI_VALUE_NONE, NULL, false },
	{ "rebase", 0, CLI_VALUE_NONE, NULL, false }, { "review", 0, CLI_VALUE_NONE, NULL, false },
	{ "yes", 'y', CLI_VALUE_NONE, NULL, false }, HELP_FLAG, { NULL, 0, 0, NULL, false },
};
static const struct cli_flag home_flags[] = {
	{ "path", 0, CLI_VALUE_NONE, NULL, false }, { "list", 0, CLI_VALUE_NONE, NULL, false },
	{ "reset", 0, CLI_VALUE_NONE, NULL, false }, HELP_FLAG, { NULL, 0, 0, NULL, false },
};
static const struct cli_flag trust_flags[] = {
	{ "show", 0, CLI_VALUE_NONE, NULL, false }, { "revoke", 0, CLI_VALUE_NONE, NULL, false }, HELP_FLAG,
	{ NULL, 0, 0, NULL, false },
};
static const struct cli_flag doctor_flags[] = {
	{ "deep", 0, CLI_VALUE_NONE, NULL, false }, { "container-proc", 0, CLI_VALUE_NONE, NULL, false }, HELP_FLAG,
	{ NULL, 0, 0, NULL, false },
};

static const struct cli_flag autophase_flags[] = {
	{ "launcher", 0, CLI_VALUE_WORD, NULL, false }, { "push", 0, CLI_VALUE_WORD, NULL, false },
	{ "push-branch", 0, CLI_VALUE_WORD, NULL, false }, { "trust-git-changes", 0, CLI_VALUE_NONE, NULL, false },
	{ "status", 0, CLI_VALUE_NONE, NULL, false }, { "dry-run", 0, CLI_VALUE_NONE, NULL, false },
	{ "retries", 0, CLI_VALUE_WORD, NULL, false }, { "backoff", 0, CLI_VALUE_WORD, NULL, false },
	{ "fix-rounds", 0, CLI_VALUE_WORD, NULL, false }, { "validate-in", 0, CLI_VALUE_CHOICE, "sandbox host", false },
	{ "pi-cmd", 0, CLI_VALUE_WORD, NULL, false }, { "library", 0, CLI_VALUE_FILE, NULL, false },
	{ "push-only", 0, CLI_VALUE_NONE, NULL, false },
	HELP_FLAG, { NULL, 0, 0, NULL, false },
};

const struct cli_command cli_commands[] = {
	{ "run", cmd_run, "run a command or harness in a sandbox (the default)", NULL, CLI_VALUE_NONE },
	{ "build", cmd_build, "build an image from a Containerfile subset or the built-in recipe", build_flags,
	  CLI_VALUE_DIR },
	{ "pull", cmd_pull, "pull an image into the store (registry, oci:, oci-archive:, docker-archive:)",
	  pull_flags, CLI_VALUE_WORD },
	{ "push", cmd_push, "push an image from the store to a registry", push_flags, CLI_VALUE_IMAGE },
	{ "save", cmd_save, "write an image from the store to an OCI archive (-o FILE)", save_flags, CLI_VALUE_IMAGE },
	{ "load", cmd_load, "import an OCI archive into the store (-i FILE)", load_flags, CLI_VALUE_NONE },
	{ "images", cmd_images, "list pulled images", images_flags, CLI_VALUE_NONE },
	{ "rmi", cmd_rmi, "remove an image from the store", help_only_flags, CLI_VALUE_IMAGE },
	{ "update", cmd_update, "re-resolve pinned image tags (--check: only compare)", update_flags,
	  CLI_VALUE_IMAGE },
	{ "ps", cmd_ps, "list live sessions", ps_flags, CLI_VALUE_NONE },
	{ "inspect", cmd_inspect, "show a session (or an image)", inspect_flags, CLI_VALUE_SESSION },
	{ "logs", cmd_logs, "show a session's record and egress log", help_only_flags, CLI_VALUE_SESSION },
	{ "import", cmd_import, "import a --workspace clone session's commits as a branch (--target)", import_flags,
	  CLI_VALUE_SESSION },
	{ "clean", cmd_clean, "remove ended sessions (--all, --volumes)", clean_flags, CLI_VALUE_NONE },
	{ "home", cmd_home, "show, list or reset the persistent sandbox homes", home_flags, CLI_VALUE_WORD },
	{ "trust", cmd_trust, "approve a project's .aisb/config and .aisb/allow (--show, --revoke)", trust_flags,
	  CLI_VALUE_DIR },
	{ "autophase", cmd_autophase, "run the .agents/phases/ pipeline: agents in sandboxes, commits on the host",
	  autophase_flags, CLI_VALUE_NONE },
	{ "doctor", cmd_doctor, "check prerequisites and print fixes (--deep)", doctor_flags, CLI_VALUE_NONE },
	{ NULL, NULL, NULL, NULL, CLI_VALUE_NONE },
};

bool cli_command_flag(const struct cli_command *c, size_t i, struct cli_flag *out)
{
	if (!c->flags)
		return args_flag(i, out);
	for (size_t k = 0; k <= i; k++)
		if (!c->flags[k].name)
			return false;
	*out = c->flags[i];
	return true;
}

const struct cli_command *cli_command_find(const char *name)
{
	for (const struct cli_command *c = cli_commands; c->name; c++)
		if (streq(c->name, name))
			return c;
	return NULL;
}
