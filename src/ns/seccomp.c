// SPDX-License-Identifier: GPL-2.0-or-later
/* seccomp.c — the one rule table of every sandbox, and the filters compiled from it when aisb was
 * built (seccomp-gen.c, seccomp-compile.c) */
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/netlink.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "ns/seccomp-internal.h"
#include "util/log.h"
#include "util/macro.h"

#define DENY(n) { .name = (n), .err = EPERM }
#define NOOP(n) { .name = (n), .err = 0 }
#define RULE1(n, e, op, a, m, v) { .name = (n), .err = (e), .cmp = { { (op), (a), (m), (v) } } }

/* Every entry says why; "second wall" means another mechanism already stops it. */
static const struct seccomp_rule base_rules[] = {
	/* clone3 passes flags in a struct seccomp cannot read: make callers fall back to clone. */
	{ .name = "clone3", .err = ENOSYS },
	/* New user namespaces re-grant every capability (CVE-2022-0185 and many like it); the
	 * sysctl user.max_user_namespaces=0 inside is the second wall. */
	RULE1("unshare", EPERM, SC_CMP_MASKED_EQ, 0, CLONE_NEWUSER, CLONE_NEWUSER),
	RULE1("clone", EPERM, SC_CMP_MASKED_EQ, SECCOMP_CLONE_FLAGS_ARG, CLONE_NEWUSER, CLONE_NEWUSER),
	DENY("setns"),
	/* The mount API family: the tree is fixed once the workload runs. This is also what keeps
	 * the /proc covers (ns/procfs.c) in place in a build RUN step, which holds capabilities in
	 * its user namespace. */
	DENY("mount"), DENY("umount2"), DENY("pivot_root"), DENY("open_tree"), DENY("move_mount"),
	DENY("fsopen"), DENY("fsconfig"), DENY("fsmount"), DENY("fspick"), DENY("mount_setattr"),
	DENY("chroot"),
	/* Kernel keyrings are not namespaced. */
	DENY("keyctl"), DENY("add_key"), DENY("request_key"),
	/* Large kernel attack surface with no use for an agent. io_uring would also create sockets
	 * (IORING_OP_SOCKET) past the family allowlist below. */
	DENY("bpf"), DENY("perf_event_open"), DENY("userfaultfd"),
	DENY("io_uring_setup"), DENY("io_uring_enter"), DENY("io_uring_register"),
	/* Host-global operations (fail without host caps anyway: second wall is the userns). */
	DENY("init_module"), DENY("finit_module"), DENY("delete_module"),
	DENY("reboot"), DENY("swapon"), DENY("swapoff"),
	DENY("settimeofday"), DENY("clock_settime"), DENY("clock_adjtime"), DENY("adjtimex"),
	DENY("acct"), DENY("kexec_load"), DENY("kexec_file_load"),
	DENY("open_by_handle_at"), DENY("name_to_handle_at"),
	DENY("quotactl"), DENY("lookup_dcookie"), DENY("nfsservctl"), DENY("vhangup"),
	/* Terminal input injection (CVE-2017-5226 class); the argument is masked to 32 bits since
	 * the kernel compares an unsigned int. */
	RULE1("ioctl", EPERM, SC_CMP_MASKED_EQ, 1, 0xffffffffu, TIOCSTI),
	RULE1("ioctl", EPERM, SC_CMP_MASKED_EQ, 1, 0xffffffffu, TIOCLINUX),
	/* Multiplexed socket calls carry their arguments in memory a filter cannot read: ENOSYS
	 * makes libc use the direct socket(2) calls filtered below. Only 32-bit x86, s390x and a
	 * few others have it; on x86_64 and aarch64 libseccomp resolves it to a pseudo number and
	 * no rule is emitted. */
	{ .name = "socketcall", .err = ENOSYS },
};

/* Reading or changing another process: ptrace itself and every call that does a ptrace access
 * check on a target without being ptrace. Unless --allow-ptrace. (Within the sandbox every
 * process has the same uid; init holds capabilities the workload lacks, so the kernel refuses
 * these on it anyway: cap_ptrace_access_check.) */
static const struct seccomp_rule ptrace_rules[] = {
	DENY("ptrace"), DENY("process_vm_readv"), DENY("process_vm_writev"),
	/* copies a file descriptor out of another process (PTRACE_MODE_ATTACH) */
	DENY("pidfd_getfd"),
	/* compares kernel objects (files, mms, ...) of two processes: an ordering oracle on
	 * kernel pointers (PTRACE_MODE_READ) */
	DENY("kcmp"),
	/* advice on another process's memory (PTRACE_MODE_READ; CAP_SYS_NICE since 5.12 is the
	 * second wall) */
	DENY("process_madvise"),
};

/* The build's RUN as root with one mapped id (the Apptainer "fakeroot without subuid"
 * technique; docs/build.md). */
static const struct seccomp_rule fakeroot_rules[] = {
	/* Ownership: package managers chown what they unpack to system users (dpkg: root:root
	 * mostly, but also _apt, man, messagebus...). With one mapped id the kernel answers
	 * EINVAL; the file keeps its owner (the caller) either way. */
	NOOP("chown"), NOOP("fchown"), NOOP("lchown"), NOOP("fchownat"),
	/* Identity: apt drops to _apt, npm and su-like helpers switch users. The call "works",
	 * the process stays uid 0 (apt checks getresuid afterwards: the builder sets
	 * APT::Sandbox::User "root" for that). */
	NOOP("setuid"), NOOP("setgid"), NOOP("setreuid"), NOOP("setregid"),
	NOOP("setresuid"), NOOP("setresgid"), NOOP("setgroups"), NOOP("setfsuid"), NOOP("setfsgid"),
	/* The 16/32-bit id variants exist only on 32-bit ABIs (i386, arm): on x86_64 libseccomp
	 * resolves them to negative pseudo numbers (measured: chown32 = -10004), and i386 calls
	 * are killed by the bad-arch action, so they are listed for other builds of aisb. */
	NOOP("chown32"), NOOP("fchown32"), NOOP("lchown32"),
	NOOP("setuid32"), NOOP("setgid32"), NOOP("setreuid32"), NOOP("setregid32"),
	NOOP("setresuid32"), NOOP("setresgid32"), NOOP("setgroups32"), NOOP("setfsuid32"),
	NOOP("setfsgid32"),
	/* Durability: dpkg syncs every file it unpacks (and npm, pip and compilers call fsync
	 * too); in a RUN step that only waits on the disk's journal (measured: an apt-get install
	 * of gcc spent most of its ~35 s unpacking on this loaded VM). Nothing in a step's upper
	 * needs to survive a crash: a build that does not finish stores nothing, and a finished
	 * one is made durable by the store (the layer blob is fdatasync'ed before it is named). So
	 * these return 0 and write nothing out, as eatmydata and dpkg's force-unsafe-io do. */
	NOOP("fsync"), NOOP("fdatasync"), NOOP("syncfs"), NOOP("sync"), NOOP("sync_file_range"),
};

/* The socket families a sandbox may create (socket(2) and socketpair(2)); every other family,
 * including ones newer kernels add, gets EAFNOSUPPORT, the answer of a kernel built without it,
 * so programs take their fallback. Why a denylist was not enough: AF_VSOCK is not namespaced,
 * so in a VM guest (Firecracker, this machine) it reaches the host from any network namespace
 * (issue 10); AF_PACKET, AF_KEY, AF_ALG, AF_TIPC, AF_RDS, AF_BLUETOOTH, AF_XDP, ... are kernel
 * surface no agent needs. Kept sorted (push_allowlist() walks the gaps). */
static const int socket_families[] = {
	AF_UNIX,    /* local IPC: every program */
	AF_INET,    /* TCP/UDP/ICMP-datagram: the netns and the nft ruleset decide where they go */
	AF_INET6,   /* the same for IPv6 */
	AF_NETLINK, /* the kernel's own interface for ip(8), getifaddrs(3) and getaddrinfo's
		     * AI_ADDRCONFIG; restricted to netlink_protocols below */
};

/* The netlink protocols a sandbox may open (the third argument of socket(AF_NETLINK, ...));
 * the others get EPROTONOSUPPORT, which libaudit's users (useradd in a build) take as "no audit
 * in this kernel" and go on. Each one is namespaced: it sees only the sandbox's netns. Kept
 * sorted. */
static const int netlink_protocols[] = {
	NETLINK_ROUTE,     /* 0: links, addresses, routes (ip, getifaddrs, glibc's resolver) */
	NETLINK_SOCK_DIAG, /* 4: ss(8) listing the sandbox's own sockets */
	NETLINK_NETFILTER, /* 12: nft list of the sandbox's own ruleset (changes need
			    * CAP_NET_ADMIN, which the workload lacks) */
};

/* Set-user-ID and set-group-ID bits (issue 22's review): the sandbox owns the project's files,
 * and the owner of a file may set its set-id bits, so `chmod 4755 f` in the project left a
 * set-id file on the host: for a root caller, a setuid-root program that any local user who
 * can reach the project runs as root (measured: `-rwsr-xr-x 0 0`). Every mount inside is
 * nosuid, so no program of the sandbox needs a set-id bit on a file it writes; in a build's
 * RUN steps dpkg sets them on the image's own files (the fakeroot table leaves them out). The
 * calls that give a mode: the chmod family, and a creation's mode (open and openat with O_CREAT
 * or O_TMPFILE, creat, mknod and mknodat of a regular file). openat2 carries its mode in a
 * struct a filter cannot read: ENOSYS, the answer of a kernel before 5.6, and callers fall back
 * to openat. The kernel reads a umode_t, so only the two bits count. */
struct setid_call {
	const char *name;
	unsigned mode_arg;      /* the argument that holds the mode */
	int flags_arg;          /* the argument that holds the open flags, or -1: always a mode */
};

static const struct setid_call setid_calls[] = {
	{ "chmod", 1, -1 },     { "fchmod", 1, -1 },   { "fchmodat", 2, -1 }, { "fchmodat2", 2, -1 },
	{ "creat", 1, -1 },     { "mknod", 1, -1 },    { "mknodat", 2, -1 },  { "open", 2, 1 },
	{ "openat", 3, 2 },
};

struct rule_buf {
	struct seccomp_rule *out;
	size_t cap, n;
};

static int push(struct rule_buf *b, struct seccomp_rule r)
{
	if (b->n >= b->cap)
		return -ENOSPC;
	b->out[b->n++] = r;
	return 0;
}

static int push_all(struct rule_buf *b, const struct seccomp_rule *rules, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (push(b, rules[i]) < 0)
			return -ENOSPC;
	return 0;
}

/* Deny rules for every value of argument @arg that is not in the sorted @allowed set: the gaps
 * below the largest allowed value as aligned power-of-two blocks (one masked comparison each,
 * like CIDR prefixes: [3, 9] is 3, 4-7, 8-9), then "at least the largest + 1". @extra, when set,
 * is a comparison every rule also needs (netlink's family). The comparisons are 64 bits wide: a
 * value whose upper half is not zero is at least the limit and refused, so garbage there cannot
 * smuggle a value past the filter. Measured: blocks instead of one rule per value halve the
 * socket rules (39 -> 20) and cut the compiler's page faults by 4. */
static int push_allowlist(struct rule_buf *b, const char *call, int err, unsigned arg, const int *allowed,
			  size_t n, const struct seccomp_arg_cmp *extra)
{
	uint64_t lo = 0, top = (uint64_t)allowed[n - 1];

	for (size_t i = 0; i <= n; i++) {
		/* the gap [lo, hi) before allowed[i]; after the last one, the open end */
		uint64_t hi = i < n ? (uint64_t)allowed[i] : UINT64_MAX;

		while (i < n && lo < hi) {
			uint64_t size = 1;
			struct seccomp_rule r = { .name = call, .err = err };

			while ((lo & (size * 2 - 1)) == 0 && lo + size * 2 <= hi)
				size *= 2;
			r.cmp[0] = (struct seccomp_arg_cmp){ SC_CMP_MASKED_EQ, arg, ~(size - 1), lo };
			if (extra)
				r.cmp[1] = *extra;
			if (push(b, r) < 0)
				return -ENOSPC;
			lo += size;
		}
		if (i == n) {
			struct seccomp_rule r = { .name = call, .err = err,
						  .cmp = { { SC_CMP_GE, arg, 0, top + 1 } } };
			if (extra)
				r.cmp[1] = *extra;
			return push(b, r);
		}
		lo = (uint64_t)allowed[i] + 1;
	}
	return 0;
}

static int push_setid_rules(struct rule_buf *b)
{
	static const uint64_t bits[] = { S_ISUID, S_ISGID };
	/* a mode counts only where the call creates a file: O_TMPFILE is __O_TMPFILE | O_DIRECTORY */
	static const uint64_t creating[] = { O_CREAT, __O_TMPFILE };

	for (size_t i = 0; i < ELEMENTSOF(setid_calls); i++) {
		const struct setid_call *c = &setid_calls[i];

		for (size_t k = 0; k < ELEMENTSOF(bits); k++) {
			struct seccomp_rule r = { .name = c->name, .err = EPERM,
						  .cmp = { { SC_CMP_MASKED_EQ, c->mode_arg, bits[k], bits[k] } } };

			if (c->flags_arg < 0) {
				if (push(b, r) < 0)
					return -ENOSPC;
				continue;
			}
			for (size_t f = 0; f < ELEMENTSOF(creating); f++) {
				r.cmp[1] = (struct seccomp_arg_cmp){ SC_CMP_MASKED_EQ, (unsigned)c->flags_arg,
								     creating[f], creating[f] };
				if (push(b, r) < 0)
					return -ENOSPC;
			}
		}
	}
	return push(b, (struct seccomp_rule){ .name = "openat2", .err = ENOSYS });
}

static int push_socket_rules(struct rule_buf *b)
{
	static const struct seccomp_arg_cmp netlink = { SC_CMP_EQ, 0, 0, AF_NETLINK };

	if (push_allowlist(b, "socket", EAFNOSUPPORT, 0, socket_families, ELEMENTSOF(socket_families), NULL) < 0 ||
	    push_allowlist(b, "socketpair", EAFNOSUPPORT, 0, socket_families, ELEMENTSOF(socket_families), NULL) < 0)
		return -ENOSPC;
	/* socketpair(AF_NETLINK) is EOPNOTSUPP in the kernel: only socket() needs protocols */
	return push_allowlist(b, "socket", EPROTONOSUPPORT, 2, netlink_protocols, ELEMENTSOF(netlink_protocols),
			      &netlink);
}

/* personality(2): only PER_LINUX (0) and the query 0xffffffff, which changes nothing
 * (`setarch --show` uses it). READ_IMPLIES_EXEC, ADDR_NO_RANDOMIZE and friends
 * weaken exploit mitigations. The kernel takes an unsigned int, so only the low 32 bits count.
 * libseccomp allows one comparison per argument and rule, and rules are alternatives, so
 * "neither 0 nor ~0" is written as "some bit i is 1 while bit i+1 (mod 32) is 0": a 32-bit
 * value that is neither all zeros nor all ones has such a 1->0 step somewhere around the
 * cycle, and 0 and ~0 have none. 32 rules is the least a set of masked comparisons can do
 * (the chosen (i, i+1) pairs must form a strongly connected graph on the 32 bits). */
static int push_personality_rules(struct rule_buf *b)
{
	for (unsigned i = 0; i < 32; i++) {
		uint64_t one = 1ull << i, next = 1ull << ((i + 1) % 32);

		if (push(b, (struct seccomp_rule)RULE1("personality", EPERM, SC_CMP_MASKED_EQ, 0, one | next, one)) < 0)
			return -ENOSPC;
	}
	return 0;
}

int seccomp_policy_rules(const struct seccomp_options *o, struct seccomp_rule *out, size_t cap)
{
	struct rule_buf b = { .out = out, .cap = cap };

	if (push_all(&b, base_rules, ELEMENTSOF(base_rules)) < 0 || push_socket_rules(&b) < 0 ||
	    push_personality_rules(&b) < 0 || (!o->fakeroot && push_setid_rules(&b) < 0) ||
	    (!o->allow_ptrace && push_all(&b, ptrace_rules, ELEMENTSOF(ptrace_rules)) < 0) ||
	    (o->fakeroot && push_all(&b, fakeroot_rules, ELEMENTSOF(fakeroot_rules)) < 0))
		return -ENOSPC;
	return (int)b.n;
}

int seccomp_policy_load(const struct seccomp_prog *prog)
{
	/* the kernel only reads the program (sock_fprog's pointer is not const in the uapi) */
	struct sock_fprog fp = { .len = prog->len, .filter = (struct sock_filter *)prog->insns };

	if (!prog->insns || !prog->len)
		return -EINVAL;
	/* what seccomp_load() does by default: no_new_privs first, then the filter, no flags */
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return -errno;
	if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &fp) < 0)
		return -errno;
	return 0;
}

void seccomp_prog_free(struct seccomp_prog *prog)
{
	if (prog->owned)
		free((void *)prog->insns);
	*prog = (struct seccomp_prog){ 0 };
}
