/* SPDX-License-Identifier: GPL-2.0-or-later */
/* caps.h — leave a sandboxed program with no capability, or with the fakeroot set.
 *
 * Clears the bounding set (needs CAP_SETPCAP, so it runs before the sets are emptied) down to
 * what is kept, the ambient set, and sets the effective/permitted/inheritable sets to it, sets
 * no_new_privs, then reads everything back. `aisb run`'s workload and a build's USER steps keep
 * nothing; a build's root RUN step keeps CAPS_FAKEROOT in its own user namespace.
 */
#ifndef AISB_NS_CAPS_H
#define AISB_NS_CAPS_H

#include <stdint.h>

#define CAPS_BIT(c) (UINT64_C(1) << (c))

/* What a build's root RUN step keeps, inside its one-id user namespace: podman's default set for
 * a container (containers.conf default_capabilities: CHOWN DAC_OVERRIDE FOWNER FSETID KILL
 * NET_BIND_SERVICE SETFCAP SETGID SETPCAP SETUID SYS_CHROOT), what package managers use on the
 * files of the one mapped id. Not CAP_SYS_ADMIN: the step can neither mount nor unmount, so
 * the /proc covers (ns/procfs.h) and the detached old root stay as init left them; not
 * CAP_NET_ADMIN: its netns's verified nft ruleset stays; not CAP_SYS_PTRACE, CAP_NET_RAW,
 * CAP_SYS_RESOURCE... As a mask of capability numbers; tests/e2e/hardening.bats reads it back
 * as CapEff 00000000800405fb. */
#define CAPS_FAKEROOT                                                                                   \
	(CAPS_BIT(0) /* CHOWN */ | CAPS_BIT(1) /* DAC_OVERRIDE */ | CAPS_BIT(3) /* FOWNER */ |             \
	 CAPS_BIT(4) /* FSETID */ | CAPS_BIT(5) /* KILL */ | CAPS_BIT(6) /* SETGID */ |                    \
	 CAPS_BIT(7) /* SETUID */ | CAPS_BIT(8) /* SETPCAP */ | CAPS_BIT(10) /* NET_BIND_SERVICE */ |      \
	 CAPS_BIT(18) /* SYS_CHROOT */ | CAPS_BIT(31) /* SETFCAP */)

/**
 * caps_limit() - keep only @keep, set no_new_privs, and verify both
 * @keep: capability numbers as a bit mask (0: none, CAPS_FAKEROOT)
 *
 * The bounding, effective and permitted sets end as @keep (the bounding set is what a root
 * program gets at execve), inheritable and ambient empty. Only system calls: safe in a CLONE_VM
 * child that must not allocate. Return: 0 or -errno (-EPERM when the read-back differs). Does
 * not log.
 */
int caps_limit(uint64_t keep);

/* Drops every capability and verifies it: caps_limit(0). Return: 0 or -errno. Does not log. */
int caps_drop_all(void);

#endif
