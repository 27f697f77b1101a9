// SPDX-License-Identifier: GPL-2.0-or-later
/* sandbox.c — the supervisor: clone, id maps, pty relay, signal forwarding, teardown */
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/filter.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "agents/bridge.h"
#include "git/gitguard.h"
#include "ns/limits.h"
#include "net/gate.h"
#include "net/netplan.h"
#include "net/pasta.h"
#include "net/tlsgate.h"
#include "ns/mounts.h"
#include "ns/refusal.h"
#include "ns/scrub.h"
#include "ns/seccomp.h"
#include "ns/userns.h"
#include "ns/ttyfilter.h"
#include "run/sandbox.h"
#include "run/session.h"
#include "run/stage.h"
#include "util/container.h"
#include "util/dl.h"
#include "util/fdpass.h"
#include "util/log.h"
#include "util/util.h"
#include "workspace/workspace.h"

/* with the user namespace (ns/userns.c), which owns them */
#define NS_FLAGS (CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWCGROUP)

static const int forwarded[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH, SIGCHLD };

static long long now_usec(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* Stage: identity (ns/userns.c). Should: map the caller's one uid and gid to 1000 inside.
 * Mustn't: map any other host id. Logs on failure. */
static int write_id_maps(pid_t pid, uid_t uid, gid_t gid, uid_t in_uid, gid_t in_gid)
{
	const struct userns_map m = { .inside_uid = in_uid, .host_uid = uid, .inside_gid = in_gid, .host_gid = gid };
	const char *failed;
	int r = userns_write_maps(pid, &m, &failed);

	char msg[512], fix[512];

	if (r == -EPERM && refusal_explain(container_detect(NULL), msg, sizeof(msg), fix, sizeof(fix))) {
		log_error("cannot write the sandbox's %s: %s: %s; fix: %s", failed, strerror(-r), msg, fix);
		return AISB_EXIT_ENFORCE;
	}
	if (r < 0)
		return log_error_errno(r, "cannot write the sandbox's %s: %m (run 'aisb doctor')", failed);
	return 0;
}

/* ---- terminal ---------------------------------------------------------------------------- */

struct term {
	int fd;                 /* the host tty we put in raw mode, or -1 */
	struct termios saved;
};

static void term_restore(struct term *t)
{
	if (t->fd >= 0) {
		tcsetattr(t->fd, TCSADRAIN, &t->saved);
		t->fd = -1;
	}
}

static int term_raw(struct term *t, int fd)
{
	struct termios raw;
	if (tcgetattr(fd, &t->saved) < 0)
		return -errno;
	raw = t->saved;
	cfmakeraw(&raw);
	/* TCSANOW, not TCSAFLUSH: keys typed before the sandbox was ready must not be lost */
	if (tcsetattr(fd, TCSANOW, &raw) < 0)
		return -errno;
	t->fd = fd;
	return 0;
}

struct buf {
	char data[16384];
	size_t len;
};

/* Moves what is readable from @in into @b; returns 0, or -1 at EOF/EIO. */
static int fill(int in, struct buf *b)
{
	ssize_t k;

	/* A zero-length read returns 0, which would look like EOF (measured: a POLLHUP on a
	 * full buffer closed the pty with its tail unread). */
	if (b->len == sizeof(b->data))
		return 0;
	k = read(in, b->data + b->len, sizeof(b->data) - b->len);
	if (k > 0) {
		b->len += (size_t)k;
		return 0;
	}
	if (k < 0 && (errno == EAGAIN || errno == EINTR))
		return 0;
	return -1;
}

/* fill() for the pty's output: through the terminal filter, which may emit up to
 * TTYFILTER_HOLD_MAX bytes more than it reads. */
static int fill_filtered(int in, struct buf *b, struct ttyfilter *tf)
{
	char raw[sizeof(b->data)];
	size_t room = sizeof(b->data) - b->len;
	ssize_t k;

	if (room <= TTYFILTER_HOLD_MAX)
		return 0; /* as in fill(): never a zero-length read */
	k = read(in, raw, room - TTYFILTER_HOLD_MAX);
	if (k > 0) {
		b->len += ttyfilter_feed(tf, raw, (size_t)k, b->data + b->len);
		return 0;
	}
	if (k < 0 && (errno == EAGAIN || errno == EINTR))
		return 0;
	return -1;
}

static int drain(int out, struct buf *b)
{
	ssize_t k;
	if (!b->len)
		return 0;
	k = write(out, b->data, b->len);
	if (k < 0)
		return (errno == EAGAIN || errno == EINTR) ? 0 : -1;
	memmove(b->data, b->data + k, b->len - (size_t)k);
	b->len -= (size_t)k;
	return 0;
}

/* One line when the terminal filter dropped what touches the host beyond the screen (clipboard,
 * DCS/APC strings); the rest (titles, links) only with -v, as every run of some TUIs sets a
 * title. */
static void report_tty_drops(const struct ttyfilter *tf)
{
	uint64_t loud = tf->dropped[TTYFILTER_DROP_CLIPBOARD] + tf->dropped[TTYFILTER_DROP_STRING];
	uint64_t all = ttyfilter_dropped(tf);

	if (!all)
		return;
	log_internal(loud ? LOG_LVL_INFO : LOG_LVL_DEBUG, 0,
		     "dropped %llu terminal control sequence(s) from the sandbox (clipboard %llu, DCS/APC strings "
		     "%llu, titles/links/other OSC %llu, other %llu); --tty-passthrough relays them",
		     (unsigned long long)all, (unsigned long long)tf->dropped[TTYFILTER_DROP_CLIPBOARD],
		     (unsigned long long)tf->dropped[TTYFILTER_DROP_STRING],
		     (unsigned long long)tf->dropped[TTYFILTER_DROP_OSC],
		     (unsigned long long)(all - loud - tf->dropped[TTYFILTER_DROP_OSC]));
}

/* ---- the run loop ------------------------------------------------------------------------ */

/* An interactive sandbox whose terminal hung up (closed window, dropped ssh) gets SIGHUP and
 * this long to end; then it is killed. Nobody can use it any more, and while it runs what it
 * wrote for git is not checked: a host git in another terminal could run it (issue 21). */
#define HANGUP_GRACE_MS 3000

static long long mono_usec(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* What run_loop() relays and watches, and this round's slots in its poll set (-1: not polled). */
struct relay {
	pid_t init_pid;
	int sfd, master, in_fd, out_fd, ws_fd;
	struct gate *gate;
	struct ttyfilter *tf;
	bool gate_idle; /* started at its first connection or query */
	bool in_open, master_open, exited;
	struct buf to_master, to_out;
	long long hup_at; /* the terminal hung up then (usec): see hangup() */
	int status;
	int i_sig, i_in, i_m, i_out, i_gate;
};

/* The poll set of one round in @pf (room for 5). Return: its size. */
static int relay_fds(struct relay *rl, struct pollfd *pf)
{
	int n = 0;

	rl->i_in = rl->i_m = rl->i_out = rl->i_gate = -1;
	pf[n] = (struct pollfd){ rl->sfd, POLLIN, 0 };
	rl->i_sig = n++;
	if (rl->in_open && rl->to_master.len < sizeof(rl->to_master.data)) {
		pf[n] = (struct pollfd){ rl->in_fd, POLLIN, 0 };
		rl->i_in = n++;
	}
	if (rl->master_open) {
		short ev = 0;
		if (rl->to_out.len + TTYFILTER_HOLD_MAX < sizeof(rl->to_out.data))
			ev |= POLLIN;
		if (rl->to_master.len)
			ev |= POLLOUT;
		/* with nothing to move, leave it out: a POLLHUP would spin the loop */
		if (ev) {
			pf[n] = (struct pollfd){ rl->master, ev, 0 };
			rl->i_m = n++;
		}
	}
	if (rl->to_out.len) {
		pf[n] = (struct pollfd){ rl->out_fd, POLLOUT, 0 };
		rl->i_out = n++;
	}
	if (rl->gate_idle && !rl->exited) {
		pf[n] = (struct pollfd){ gate_wake_fd(rl->gate), POLLIN, 0 };
		rl->i_gate = n++;
	}
	return n;
}

/* Polls @pf; kills a sandbox that outlived its terminal by HANGUP_GRACE_MS. Return: 1 something
 * is ready, 0 poll again, -1 stop relaying. */
static int relay_wait(struct relay *rl, struct pollfd *pf, int n)
{
	int timeout = -1, k;

	if (rl->exited)
		/* init is gone: flush what the pty still holds, without blocking forever on a
		 * terminal that stopped reading */
		return poll(pf, (nfds_t)n, 2000) <= 0 ? -1 : 1;
	if (rl->hup_at > 0) {
		long long left = rl->hup_at + HANGUP_GRACE_MS * 1000LL - mono_usec();
		timeout = left > 0 ? (int)(left / 1000) + 1 : 0;
	}
	k = poll(pf, (nfds_t)n, timeout);
	if (k < 0 && errno == EINTR)
		return 0;
	if (k < 0)
		return -1;
	if (k == 0 && rl->hup_at > 0) {
		/* the sandbox outlived its terminal: ended, so that its git check runs */
		kill(rl->init_pid, SIGKILL);
		rl->hup_at = -1;
		return 0;
	}
	return 1;
}

/* One signal from the signalfd: SIGCHLD reaps (init's status kept, a gate that failed to
 * confine itself ends the sandbox), SIGWINCH resizes the pty, the others go to init. */
static void relay_signal(struct relay *rl)
{
	struct signalfd_siginfo si;

	if (read(rl->sfd, &si, sizeof(si)) != sizeof(si))
		return;
	if (si.ssi_signo == SIGCHLD) {
		pid_t w;
		int st;
		/* we are a subreaper: reap helpers too, remember init */
		while ((w = waitpid(-1, &st, WNOHANG)) > 0)
			if (w == rl->init_pid) {
				rl->status = st;
				rl->exited = true;
			} else if (gate_reaped(rl->gate, w, st) < 0 && !rl->exited) {
				/* the gate could not confine itself: 77 */
				kill(rl->init_pid, SIGKILL);
			}
	} else if (si.ssi_signo == SIGWINCH) {
		struct winsize ws;
		if (rl->master_open && rl->ws_fd >= 0 && ioctl(rl->ws_fd, TIOCGWINSZ, &ws) == 0)
			(void)ioctl(rl->master, TIOCSWINSZ, &ws);
	} else if (!rl->exited) {
		kill(rl->init_pid, (int)si.ssi_signo);
		if (si.ssi_signo == SIGHUP && rl->in_fd >= 0 && !rl->hup_at)
			rl->hup_at = mono_usec();
	}
}

/* The gate's first wake-up starts it; then the bytes move: terminal to pty, pty (filtered) to
 * the terminal. An EOF on the terminal is its hangup. */
static void relay_move(struct relay *rl, const struct pollfd *pf)
{
	if (rl->i_gate >= 0 && (pf[rl->i_gate].revents & POLLIN)) {
		rl->gate_idle = false;
		/* logged; without its gate the sandbox could only hang on the network */
		if (gate_start(rl->gate) < 0)
			kill(rl->init_pid, SIGKILL);
	}
	if (rl->i_in >= 0 && (pf[rl->i_in].revents & (POLLIN | POLLHUP | POLLERR)))
		if (fill(rl->in_fd, &rl->to_master) < 0) {
			rl->in_open = false;
			/* EOF or EIO on the host terminal: it hung up (in raw mode ^D is a byte) */
			if (!rl->exited && !rl->hup_at) {
				kill(rl->init_pid, SIGHUP);
				rl->hup_at = mono_usec();
			}
		}
	if (rl->i_m >= 0 && (pf[rl->i_m].revents & POLLOUT))
		if (drain(rl->master, &rl->to_master) < 0)
			rl->to_master.len = 0;
	if (rl->i_m >= 0 && (pf[rl->i_m].revents & (POLLIN | POLLHUP | POLLERR)))
		if (fill_filtered(rl->master, &rl->to_out, rl->tf) < 0)
			rl->master_open = false;
	if (rl->i_out >= 0 && (pf[rl->i_out].revents & (POLLOUT | POLLERR | POLLHUP)))
		if (drain(rl->out_fd, &rl->to_out) < 0)
			rl->to_out.len = 0;
	if (!rl->master_open && rl->to_out.len)
		while (rl->to_out.len && drain(rl->out_fd, &rl->to_out) == 0 && rl->to_out.len)
			;
}

/* Relays the pty (when @master >= 0; its output through @tf) and forwards signals until init
 * exits. Return: init's wait status. Does not log. */
static int run_loop(pid_t init_pid, int sfd, int master, int in_fd, int out_fd, int ws_fd, struct gate *gate,
		    struct ttyfilter *tf)
{
	struct relay rl = { .init_pid = init_pid, .sfd = sfd, .master = master, .in_fd = in_fd, .out_fd = out_fd,
			    .ws_fd = ws_fd, .gate = gate, .tf = tf, .gate_idle = gate != NULL,
			    .in_open = in_fd >= 0, .master_open = master >= 0 };
	if (master >= 0)
		fcntl(master, F_SETFL, fcntl(master, F_GETFL) | O_NONBLOCK);
	/* After init exits, keep going until the pty is drained (read gives EIO once the last
	 * slave fd is gone) and relayed: the writer may finish long before we catch up (measured:
	 * under CPU load `seq 200000` lost its tail in 13 of 20 runs when this stopped as soon as
	 * the out buffer was empty). */
	while (!rl.exited || rl.master_open || rl.to_out.len) {
		struct pollfd pf[5];
		int n = relay_fds(&rl, pf), w = relay_wait(&rl, pf, n);

		if (w < 0)
			break;
		if (w == 0)
			continue;
		if (pf[rl.i_sig].revents & POLLIN)
			relay_signal(&rl);
		relay_move(&rl, pf);
	}
	if (!rl.exited) {
		kill(init_pid, SIGKILL);
		while (waitpid(init_pid, &rl.status, 0) < 0 && errno == EINTR)
			;
	}
	return rl.status;
}

/* ---- network (issue 3) ------------------------------------------------------------------- */

static int open_session_file(const struct aisb_session *ss, const char *name)
{
	_cleanup_free_ char *path = path_join(ss->dir, name);

	if (!path)
		return -ENOMEM;
	return open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
}

/* Stage: pasta. Should: attach pasta to the sandbox's netns before init goes on, and wait until it
 * configured it. Mustn't: forward anything of the host's loopback (-T none -U none, --no-map-gw). */
static int start_pasta(const struct aisb_plan *p, const struct aisb_session *ss, pid_t init_pid, struct pasta *out)
{
	struct pasta_opts o;
	uint16_t reserved[GATE_PORTS_N];
	struct pasta_spec spec = { .pid = init_pid, .publish = p->netp->publish, .n_publish = p->netp->n_publish,
				   .uid = geteuid(), .gid = getegid(), .reserved = reserved,
				   .n_reserved = netplan_has_gate(p->netp) ? GATE_PORTS_N : 0,
				   /* full mode: IPv6 wherever the host has it, and the host's resolver */
				   .ipv6 = netplan_mode(p->netp) == NET_FULL ||
					   allow_has_family(&p->netp->policy.allow, AF_INET6),
				   .dns_forward = netplan_mode(p->netp) == NET_FULL };
	_cleanup_close_ int log_fd = -1;
	int r;

	for (size_t i = 0; i < GATE_PORTS_N; i++)
		reserved[i] = gate_ports[i].port;
	r = pasta_detect(p->netp->pasta_path, &o);
	if (r < 0)
		return r;
	if (spec.dns_forward && !o.dns_forward)
		log_warn("--net full: this pasta has no --dns-forward; the sandbox has no name resolution "
			    "(install a newer '%s' package)", PASTA_PACKAGE);
	log_fd = open_session_file(ss, "pasta.log");
	return pasta_start(p->netp->pasta_path, &o, &spec, log_fd, out);
}

/* The gate, made while init builds the sandbox; its listeners come with init's ready message
 * (gate_listen()), its process and egress log (@log_path, in the session dir) with the first
 * connection (run_loop()). */
static int start_gate(const struct aisb_plan *p, const struct aisb_session *ss, char **log_path, struct gate **out)
{
	static char hint[96]; /* outlives the gate: one sandbox per supervisor */

	*log_path = path_join(ss->dir, "egress.jsonl");
	if (!*log_path)
		return log_error_errno(-ENOMEM, "out of memory");
	snprintf(hint, sizeof(hint), "aisb logs %s", ss->id);
	return netplan_gate_new(p->netp, -1, *log_path, hint, out);
}

/* The plan whose keys the tlsgate's copy of this process's memory must lose, set only while
 * tlsgate_spawn() forks it (tls_wipe_child()). */
static const struct net_plan *tls_wipe_plan;

/* In the tlsgate, right after its fork (a pthread_atfork() child handler: tlsgate_spawn() forks,
 * and the tlsgate needs no key): zero the model keys in its copy of the plan and every variable
 * of its copy of the environment that holds one (the caller's $AI_API_TOKEN, ...). Measured
 * before this: a scan of the tlsgate's memory found the key twice, in the heap (the plan's
 * netplan keys) and on the stack (the environment); after it, nowhere (docs/threat-model.md).
 * The tlsgate parses the sandbox's TLS: what is not in its memory, an exploit of it cannot read. */
static void tls_wipe_child(void)
{
	const struct net_plan *n = tls_wipe_plan;

	if (!n)
		return;
	for (char **e = environ; *e; e++) {
		char *v = strchr(*e, '=');

		for (size_t i = 0; v && i < n->n_keys; i++)
			if (strstr(v + 1, n->keys[i].value)) {
				explicit_bzero(v + 1, strlen(v + 1));
				break;
			}
	}
	for (size_t i = 0; i < n->n_keys; i++)
		explicit_bzero(n->keys[i].value, strlen(n->keys[i].value));
}

/* Stage: the tlsgate (--key-via-gate with an https:// endpoint), on the host before the
 * sandbox exists. Should: fork it (tlsgate_spawn(): it makes the session CA and one leaf per
 * endpoint name, frees the CA key and confines itself), write the CA certificate and the bundle
 * for the sandbox (session_write_tls()), and keep its pid and control socket for the gate
 * (gate_tls()). Mustn't: let the sandbox start without it when a key needs it (77), write
 * anything but the public certificate, or leave the model key in the tlsgate's memory
 * (tls_wipe_child()). Return: 0 or the exit code. Logs on failure. */
static int tls_stage(const struct aisb_plan *p, const struct aisb_session *ss, pid_t *pid, int *ctl_fd)
{
	static bool wipe_registered;
	struct tlsgate_config cfg = { .n_names = 0 };
	_cleanup_free_ char *pem = NULL;
	char why[TLSGATE_REASON_MAX + 64] = "";
	int e;

	if (!netplan_has_tls(p->netp))
		return 0;
	cfg.n_names = netplan_tls_names(p->netp, cfg.names);
	if (!wipe_registered && pthread_atfork(NULL, NULL, tls_wipe_child) != 0)
		return log_error("--key-via-gate: cannot prepare the TLS terminator's start"), AISB_EXIT_FAILED;
	wipe_registered = true;
	fflush(NULL);
	tls_wipe_plan = p->netp;
	e = tlsgate_spawn(&cfg, pid, ctl_fd, &pem, why, sizeof(why));
	tls_wipe_plan = NULL;
	if (e < 0)
		return log_error("--key-via-gate: cannot start the TLS terminator for the https:// model endpoint: %s",
				 why[0] ? why : strerror(-e)), AISB_EXIT_ENFORCE;
	if (!pem || session_write_tls(ss, pem, p->netp->tls_roots) < 0)
		return AISB_EXIT_FAILED; /* the caller stops it (tls_reap()) */
	return 0;
}

/* Kills and reaps a tlsgate that no gate took (a run that failed before the gate existed). */
static void tls_reap(pid_t *pid, int *ctl_fd)
{
	if (*ctl_fd >= 0)
		close(*ctl_fd);
	*ctl_fd = -1;
	if (*pid <= 0)
		return;
	kill(*pid, SIGKILL);
	while (waitpid(*pid, NULL, 0) < 0 && errno == EINTR)
		;
	*pid = -1;
}

/* The root-relative paths of the read-only binds below @root (the .git pins): the sandbox could
 * not write them, so gitguard does not judge them. */
static char **pinned_below(const struct mount_plan *mp, const char *root)
{
	char **v = NULL;
	size_t n = strlen(root);
	for (size_t i = 0; i < mp->n; i++) {
		const struct mount_op *op = &mp->ops[i];
		if (op->kind == MOP_BIND && (op->flags & MOP_F_RO) && strncmp(op->dst, root, n) == 0 &&
		    op->dst[n] == '/' && strv_push(&v, op->dst + n + 1) < 0) {
			strv_free(v);
			return NULL;
		}
	}
	return v;
}

/* The git check of this run (gitguard.h): every tree the sandbox could write and a host git may
 * run in (the project, read-write --mounts; a file --mount is judged as git config); findings go
 * into <state>/quarantine/<session>/ (with --writable-git they are only named). Empty when there
 * is nothing to check (a clone workspace is the sandbox's own: no host git runs there,
 * workspace.h). Return: 0 or -ENOMEM. Does not log. */
static int guard_job(const struct aisb_plan *p, const struct aisb_session *ss, const struct mount_plan *mp,
		     const struct timespec *since, struct gitguard_job *j)
{
	_cleanup_free_ char *qbase = NULL;

	*j = (struct gitguard_job){ .since = *since, .owner = getpid(), .pidns = gitguard_pidns() };
	(void)proc_start_time(getpid(), &j->owner_start);
	if (!(j->id = strdup(ss->id)) || asprintf(&qbase, "%s/quarantine/%s", ss->state_dir, ss->id) < 0)
		return -ENOMEM;
	for (size_t i = 0; i <= p->n_mounts; i++) {
		_cleanup_free_ char *q = NULL;
		char **pinned = NULL;
		const char *root;
		bool is_file = false;
		if (i == 0) {
			if (!p->project_src || p->project_ro || p->workspace)
				continue;
			root = p->project_src;
			pinned = pinned_below(mp, p->project_dst);
		} else {
			const struct plan_mount *m = &p->mounts[i - 1];
			if (m->ro)
				continue;
			root = m->src;
			is_file = !m->is_dir;
		}
		if ((i == 0 ? asprintf(&q, "%s/project", qbase) : asprintf(&q, "%s/mount-%zu", qbase, i)) < 0 ||
		    gitguard_job_add(j, root, is_file, pinned, p->writable_git ? NULL : q) < 0)
			return -ENOMEM;
	}
	return 0;
}

/* Logs a stage's failure report (the errno's text is added here: the workload cannot format
 * it, see init.c). Return: the exit code it carries. */
static int report_log(struct stage_report *rep)
{
	char msg[512], fix[512];
	size_t n, t;
	bool has_err_text = false;

	rep->msg[sizeof(rep->msg) - 1] = 0;
	/* a step whose message already ends with the errno's text (init's mounts) */
	if (rep->err > 0) {
		n = strlen(rep->msg);
		t = strlen(strerror(rep->err));
		has_err_text = n >= t && streq(rep->msg + n - t, strerror(rep->err));
	}
	/* init's mounts refused with EPERM: when the platform is the cause (a seccomp profile that
	 * denies mount, pivot_root, the new mount API...), that is the message and the exit is the
	 * enforcement refusal (77), as doctor says (ns/refusal.h) */
	if (rep->err == EPERM && rep->code == AISB_EXIT_FAILED &&
	    refusal_explain(container_detect(NULL), msg, sizeof(msg), fix, sizeof(fix))) {
		log_error("%s%s%s: %s; fix: %s", rep->msg, has_err_text ? "" : ": ", has_err_text ? "" : strerror(rep->err),
			  msg, fix);
		return AISB_EXIT_ENFORCE;
	}
	if (rep->err > 0 && !has_err_text)
		log_error("%s: %s", rep->msg, strerror(rep->err));
	else
		log_error("%s", rep->msg);
	return rep->code;
}

int sandbox_exit_code(int st)
{
	if (WIFEXITED(st))
		return WEXITSTATUS(st);
	if (WIFSIGNALED(st))
		return 128 + WTERMSIG(st);
	return AISB_EXIT_FAILED;
}

/* Stage: preparation, on the host before any namespace exists. Should: put the session's
 * cgroup leaf in place (limits), read the host facts and build the mount plan (pure), and load
 * libmnl/libnftnl here when init will install the nftables ruleset: after pivot_root a library
 * would come from the sandbox's root (util/dl.h). Mustn't: create anything of the sandbox yet.
 * Return: 0 or the exit code. Logs on failure. */
static int prepare_stage(const struct aisb_plan *p, const struct aisb_session *ss, struct limits_run *lr,
			 struct mount_host_facts *facts, struct mount_plan *mp)
{
	int r = limits_setup(p, ss, lr);

	if (r != 0)
		return r;
	r = mount_host_facts(p, ss, facts);
	if (r >= 0)
		r = mount_plan_build(p, facts, bridge_home_binds(p->bridge), mp);
	if (r < 0)
		return r == -ENOMEM ? AISB_EXIT_FAILED : AISB_EXIT_POLICY;
	if (p->run_uid != p->host_uid) {
		/* a root caller as USERNS_ROOT_RUN_ID: its sources as trees idmapped 0 -> that id
		 * (ns/mounts.h); the plan's probe found them idmappable, so a failure now is a
		 * change under us, and running as uid 0 instead would be a weaker sandbox than the
		 * plan printed */
		char err[PATH_MAX + 128];
		r = mount_remap_plan(mp, p->run_uid, err, sizeof(err));
		if (r < 0)
			return log_error("cannot map root's files to the sandbox's uid %u: %s (run 'aisb doctor')",
					 (unsigned)p->run_uid, err),
			       r == -ENOMEM ? AISB_EXIT_FAILED : AISB_EXIT_ENFORCE;
	}
	if (netplan_has_gate(p->netp) && (dl_load(&dl_libmnl) < 0 || dl_load(&dl_libnftnl) < 0))
		return AISB_EXIT_ENFORCE;
	return 0;
}

/* Which of fds 0-2 are terminals (the pty slave replaces exactly those), where the window size
 * comes from and where output goes. Does not log. */
static void terminal_stage(unsigned *tty_mask, int *ws_fd, int *out_fd, struct winsize *ws)
{
	for (int i = 0; i < 3; i++)
		if (isatty(i)) {
			*tty_mask |= 1u << i;
			if (*ws_fd < 0)
				*ws_fd = i;
			if (i > 0 && *out_fd < 0)
				*out_fd = i;
		}
	if (*ws_fd >= 0)
		(void)ioctl(*ws_fd, TIOCGWINSZ, ws);
}

/* Stage: channels. Should: block the forwarded signals (read from a signalfd from here on;
 * *@oldmask is restored on every exit path), become a child subreaper, and make the sync socket
 * and the CLOEXEC report pipe. Mustn't: leave a signal unblocked that the loop forwards. Return:
 * 0 or -errno. Logs on failure. */
static int channel_stage(sigset_t *mask, sigset_t *oldmask, int *sfd, int sync_fds[2], int err_fds[2])
{
	sigemptyset(mask);
	for (size_t i = 0; i < ELEMENTSOF(forwarded); i++)
		sigaddset(mask, forwarded[i]);
	sigprocmask(SIG_BLOCK, mask, oldmask);
	*sfd = signalfd(-1, mask, SFD_CLOEXEC);
	if (*sfd < 0)
		return log_error_errno(-errno, "cannot create a signalfd: %m");
	(void)prctl(PR_SET_CHILD_SUBREAPER, 1);
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sync_fds) < 0 || pipe2(err_fds, O_CLOEXEC) < 0)
		return log_error_errno(-errno, "cannot create the sync channel: %m");
	return 0;
}

/* Stage: clone. Should: create every namespace at once (userns_clone(): a raw clone with a NULL
 * stack, like fork, so the child is PID 1 of the new pid namespace) and run init_main() there with only its
 * ends of the channels. Mustn't: return in the child. Return: init's pid, or -1 with *@code set
 * (77 when the kernel or a container engine refuses user namespaces). Logs on failure. */
static pid_t clone_stage(const struct init_args *ia, int sync_fd, int err_fd, int sfd, int tls_fd, int *code)
{
	char msg[512], fix[512];
	enum container_engine e;
	pid_t pid;
	int r;

	fflush(NULL);
	pid = userns_clone(NS_FLAGS);
	if (pid == 0) {
		close(sync_fd);
		close(err_fd);
		close(sfd);
		if (tls_fd >= 0)
			close(tls_fd); /* the tlsgate's control socket is the gate's alone */
		init_main(ia);
	}
	if (pid > 0)
		return pid;
	r = -errno;
	e = container_detect(NULL);
	/* EPERM: a seccomp profile (Docker's default denies CLONE_NEWUSER), an LSM or a sysctl
	 * refuses; the sandbox cannot exist, so this is the enforcement refusal (77), with the
	 * one cause and fix doctor's userns check prints too (ns/refusal.h), else the engine's
	 * option when aisb runs in a container */
	if ((r == -EPERM && refusal_explain(e, msg, sizeof(msg), fix, sizeof(fix))) ||
	    ((r == -EPERM || r == -ENOSPC) &&
	     refusal_userns_off("/proc", (unsigned)getuid(), -r, msg, sizeof(msg), fix, sizeof(fix)))) {
		log_error("cannot create the sandbox namespaces: %s: %s; fix: %s", strerror(-r), msg, fix);
		*code = AISB_EXIT_ENFORCE;
	} else if (r == -EPERM && e != CONTAINER_NONE) {
		log_error("cannot create the sandbox namespaces: %s; fix: %s", strerror(-r),
			  container_fix(e, CONTAINER_NEED_USERNS));
		*code = AISB_EXIT_ENFORCE;
	} else {
		log_error_errno(r, "cannot create the sandbox namespaces: %m (are unprivileged user "
				"namespaces allowed? run 'aisb doctor' for the fix)");
		if (r == -EPERM)
			*code = AISB_EXIT_ENFORCE;
	}
	return -1;
}

/* Stage: start init. Should: write the id maps (ns/userns.c), move init into the session's
 * cgroup leaf before it may fork the workload (nothing runs unlimited), start pasta when the
 * plan needs it, send "go". (The seccomp filter is built into the binary: init takes it itself,
 * ns/seccomp.h.) Mustn't: let init go on when a map or the cgroup could not be set. Return: 0;
 * -1 (kill init, 125); or an exit code (kill init with it: 77 for a withheld /dev/net/tun).
 * Logs on failure. */
static int start_stage(const struct aisb_plan *p, const struct aisb_session *ss, pid_t pid, struct limits_run *lr,
		       struct pasta *pasta, int sync_fd, const struct sync_go *go)
{
	int r;

	r = write_id_maps(pid, p->run_uid, p->run_gid, p->uid, p->gid);
	if (r != 0)
		return r < 0 ? -1 : r; /* 77: the platform refuses the map (ns/refusal.h) */
	if (limits_attach(lr, pid) < 0)
		return -1;
	if (p->netp && p->netp->pasta && (r = start_pasta(p, ss, pid, pasta)) < 0)
		/* the platform withholds /dev/net/tun (a container's default): a refusal, like a
		 * masked /proc, with the engine's option in pasta_start()'s message */
		return r == -ENODEV ? AISB_EXIT_ENFORCE : -1;
	if (fdpass_send(sync_fd, go, sizeof(*go), NULL, 0) < 0)
		return log_error_errno(-errno, "cannot start the sandbox's init: %m"), -1;
	return 0;
}

/* Kills init (and with it the sandbox's pid namespace) and reaps it. Does not log. */
static void kill_and_reap(pid_t pid)
{
	int st;

	if (pid <= 0)
		return;
	kill(pid, SIGKILL);
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
}

/* Closes what channel_stage() made, reaps anything adopted as subreaper, restores the signal
 * mask. Does not log. */
static void release_channels(int sync_fds[2], int err_fds[2], int sfd, const sigset_t *oldmask)
{
	for (int i = 0; i < 2; i++) {
		if (sync_fds[i] >= 0)
			close(sync_fds[i]);
		if (err_fds[i] >= 0)
			close(err_fds[i]);
	}
	if (sfd >= 0)
		close(sfd);
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
	sigprocmask(SIG_SETMASK, oldmask, NULL);
}

/* What one run holds between its stages: sandbox_run() owns it, the stages fill it in. */
struct run {
	const struct aisb_plan *p;          /* read-only: the plan is a value (core/plan.h) */
	struct aisb_session *ss;            /* what this run made: session_create() fills it */
	int verdict_fd;                     /* the plan's guard_verdict_fd, until git_guard() closes it */
	struct mount_host_facts facts;
	struct mount_plan mp;
	struct limits_run lr;
	struct term term;
	struct sync_go go;
	sigset_t mask, oldmask;
	int sync_fds[2], err_fds[2];
	int sfd, master, ws_fd, out_fd;
	int gate_fds[NETPLAN_GATE_FDS];     /* init's listeners until the gate takes them */
	char *egress_path;
	struct pasta pasta;
	struct gate *gate;
	pid_t tls_pid;                      /* the tlsgate, until the gate takes it (gate_tls()) */
	int tls_fd;
	unsigned tty_mask;
	struct timespec since;              /* gitguard judges what changed after it */
	struct gitguard_job job;            /* this run's git check, recorded before the clone */
	bool recorded;
	bool cloned;
	pid_t pid;                          /* init's */
	size_t git_quarantined;             /* files gitguard moved (or, --writable-git, named) */
};

/* Stage: the pending check, on the host, init cloned but waiting for its maps. Should: record this run's
 * git check on disk (<state>/pending/<id>.json), so that a supervisor killed before it ran the
 * check (SIGKILL, the OOM killer, a job timeout) does not let what the sandbox wrote pass: the
 * next aisb command runs it (issue 21). Mustn't: start a run whose check could be forgotten.
 * Return: 0 or 125. Logs on failure. */
static int pending_stage(struct run *r)
{
	_cleanup_free_ char *dir = NULL;
	int e;

	if (guard_job(r->p, r->ss, &r->mp, &r->since, &r->job) < 0)
		return log_error("out of memory"), AISB_EXIT_FAILED;
	r->job.init = r->pid;
	(void)proc_start_time(r->pid, &r->job.init_start);
	if (!r->job.n)
		return 0;
	if (!(dir = path_join(r->ss->state_dir, "pending")))
		return log_error("out of memory"), AISB_EXIT_FAILED;
	e = gitguard_job_record(&r->job, dir);
	if (e < 0)
		return log_error_errno(e, "cannot record the git check of this run in '%s': %m (it must survive a killed "
				       "aisb; make the state dir writable, or set XDG_STATE_HOME)", dir),
		       AISB_EXIT_FAILED;
	r->recorded = true;
	return 0;
}

/* After the workload: the recorded check runs (its message is the last of the exit summary),
 * then the record goes; aisb autophase gets the verdict. Logs (the findings). */
static void git_guard(struct run *r)
{
	_cleanup_free_ char *dir = path_join(r->ss->state_dir, "pending");
	struct gitguard_verdict v = { 0 };

	if (r->cloned && r->job.n)
		(void)gitguard_job_run(&r->job, stderr, &v);
	r->git_quarantined += v.found;
	if (r->recorded && dir)
		(void)gitguard_job_forget(&r->job, dir);
	if (r->verdict_fd > 2) {
		(void)dprintf(r->verdict_fd, "found=%zu unjudged=%zu failed=%zu incomplete=%d\n", v.found, v.unjudged,
			      v.failed, v.incomplete ? 1 : 0);
		close(r->verdict_fd);
		r->verdict_fd = 0;
	}
}


/* Stage: admission, before anything exists. Should: refuse an environment above the
 * workload's bound (it is built in init, without allocation) and warn that --net full is
 * unfiltered. Mustn't: create anything. Return: 0 or 78. Logs on failure. */
static int admit_stage(const struct aisb_plan *p)
{
	if (p->n_env > SANDBOX_ENV_MAX)
		return log_error("the command would get %zu environment variables, more than the limit of %d "
				 "(pass fewer --env/--env-file entries)", p->n_env, SANDBOX_ENV_MAX),
		       AISB_EXIT_POLICY;
	if (netplan_mode(p->netp) == NET_FULL)
		log_warn("--net full: the sandbox gets UNFILTERED network access through pasta; nothing is "
			 "allowlisted or logged (use --net allow with --allow entries instead)");
	return 0;
}

/* Stage: the session's content, on the host. Should: make a --workspace clone now that the
 * session has its id, write the harness's bridged config into the home (agents/bridge.h)
 * before the tree is planned (an ephemeral home binds what it wrote), then prepare_stage(); the
 * tlsgate before all of it, when a key needs it (tls_stage()).
 * Mustn't: create anything of the sandbox yet. Return: 0 or the exit code. Logs on failure. */
static int session_stage(struct run *r)
{
	int e = tls_stage(r->p, r->ss, &r->tls_pid, &r->tls_fd);

	/* first: a tlsgate that cannot start stops the run before anything of it is made (a
	 * clone, the bridged config, the pending check for passed-in values) */
	if (e != 0)
		return e;
	if (r->p->workspace && workspace_prepare(r->p, r->ss) < 0)
		return AISB_EXIT_FAILED;
	if (bridge_apply(r->p, r->ss) < 0)
		return AISB_EXIT_FAILED;
	/* the check for passed-in values is pending from here on (ns/scrub.h) */
	if (scrub_begin(r->p, r->ss, &r->since) < 0)
		return AISB_EXIT_FAILED;
	return prepare_stage(r->p, r->ss, &r->lr, &r->facts, &r->mp);
}

/* Stage: init ready. Should: take init's ready message with the pty master and the gate's
 * listeners (handed to the gate, which owns them from here on), or else log init's report of
 * why it failed. Mustn't: accept listeners the plan has no gate for. Return: 0, or the exit
 * code (init is then killed). Logs on failure. */
static int ready_stage(struct run *r)
{
	int rfds[1 + NETPLAN_GATE_FDS];
	struct sync_ready ready = { 0 }; /* out: what init sent (cppcheck reads it as an input) */
	struct stage_report rep;
	size_t nfds = 0;
	ssize_t k;
	int e;

	k = fdpass_recv(r->sync_fds[0], &ready, sizeof(ready), rfds, ELEMENTSOF(rfds), &nfds);
	if (k != sizeof(ready) || ready.magic != SYNC_MAGIC || ready.gate_nfds > nfds ||
	    (ready.gate_nfds != 0 && ready.gate_nfds != NETPLAN_GATE_FDS)) {
		/* init failed before forking the workload: its report says why */
		for (size_t i = 0; i < nfds; i++)
			close(rfds[i]);
		if (read_full(r->err_fds[0], &rep, sizeof(rep)) == sizeof(rep))
			return report_log(&rep);
		log_error("the sandbox's init exited before it was ready");
		return AISB_EXIT_FAILED;
	}
	r->master = nfds > ready.gate_nfds ? rfds[0] : -1;
	for (size_t i = 0; i < ready.gate_nfds; i++)
		r->gate_fds[i] = rfds[nfds - ready.gate_nfds + i];
	if (r->gate_fds[0] < 0)
		return 0;
	/* the gate owns them from here on (its process takes them at its start) */
	if (!r->gate) {
		log_error("init passed out gate sockets, but the plan has no gate");
		return AISB_EXIT_FAILED;
	}
	e = gate_listen(r->gate, r->gate_fds[0], r->gate_fds[1], r->gate_fds[2], r->gate_fds[3]);
	for (size_t i = 0; i < NETPLAN_GATE_FDS; i++)
		r->gate_fds[i] = -1;
	return e < 0 ? AISB_EXIT_FAILED : 0;
}

/* Stage: launch, init cloned. Should: start init (start_stage()), make the gate while init
 * mounts (off the start-up path, bench/startup.sh), take init's ready message, then wait for
 * the report pipe to close at the workload's execve. Mustn't: let the workload run when any
 * of it failed. Return: 0 with the command running, or the exit code (the caller kills
 * init). Logs on failure. */
static int launch_stage(struct run *r)
{
	struct stage_report rep;
	int e;

	e = start_stage(r->p, r->ss, r->pid, &r->lr, &r->pasta, r->sync_fds[0], &r->go);
	if (e != 0)
		return e < 0 ? AISB_EXIT_FAILED : e;
	if (r->p->netp && netplan_has_gate(r->p->netp) && start_gate(r->p, r->ss, &r->egress_path, &r->gate) < 0)
		return AISB_EXIT_FAILED;
	/* the gate owns the tlsgate from here on: its process gets the control socket, and
	 * gate_reaped()/gate_stop() reap the tlsgate with the gate's other helpers */
	if (r->tls_pid > 0 && r->gate) {
		e = gate_tls(r->gate, r->tls_pid, TAKE_FD(r->tls_fd));
		r->tls_pid = -1;
		if (e < 0)
			return AISB_EXIT_FAILED;
	}
	e = ready_stage(r);
	if (e != 0)
		return e;
	/* The report pipe closes at execve; a report means the workload failed before it. */
	if (read_full(r->err_fds[0], &rep, sizeof(rep)) == sizeof(rep))
		return report_log(&rep);
	return 0;
}

/* The exit line of a run that had the container's /proc (--container-proc, chosen, and this
 * /proc masked, so init bound it: mount-apply.c), so the trade is said at the end too. */
static void report_container_proc(const struct aisb_plan *p)
{
	_cleanup_free_ char *mi = NULL;

	if (!p->container_proc || read_file_at(AT_FDCWD, "/proc/self/mountinfo", 1 << 20, &mi, NULL) < 0 ||
	    container_proc_overmounts(mi, "/proc") == 0)
		return;
	log_warn("this run used the container's /proc (--container-proc): " CONTAINER_PROC_EXPOSURE);
}

/* Stage: relay, the command running. Should: put the host terminal in raw mode when the pty
 * serves stdin, relay through the terminal filter and forward signals until init exits
 * (run_loop() reaps it), restore the terminal, and report the filter's drops and the gate's
 * summary. Mustn't: leave the terminal raw. Return: the exit code. Logs (the summaries). */
static int relay_stage(struct run *r)
{
	bool tty_in = r->master >= 0 && (r->tty_mask & 1);
	struct ttyfilter tf;
	int st, code;

	if (tty_in)
		(void)term_raw(&r->term, 0);
	ttyfilter_init(&tf, r->p->tty_passthrough);
	st = run_loop(r->pid, r->sfd, r->master, tty_in ? 0 : -1, r->out_fd >= 0 ? r->out_fd : 1, r->ws_fd, r->gate,
		      &tf);
	code = gate_refused(r->gate) ? AISB_EXIT_ENFORCE : sandbox_exit_code(st);
	term_restore(&r->term);
	report_tty_drops(&tf);
	if (r->gate) {
		gate_stop(r->gate);
		gate_summary(r->gate, stderr);
	}
	report_container_proc(r->p);
	return code;
}

/* Stage: teardown, init reaped. Should: restore the terminal, stop the gate and pasta, then
 * judge what the sandbox wrote for host git (git_guard()): the kernel kills a pid namespace
 * whose init exits and reports init last, so nothing writes the project any more. Mustn't:
 * run before init is reaped. Logs (gitguard's findings). */
static void teardown_stage(struct run *r)
{
	term_restore(&r->term);
	if (r->master >= 0)
		close(r->master);
	gate_free(r->gate);
	for (size_t i = 0; i < NETPLAN_GATE_FDS; i++)
		if (r->gate_fds[i] >= 0)
			close(r->gate_fds[i]);
	pasta_stop(&r->pasta);
	git_guard(r);
	/* the values passed in, wherever the session wrote them (ns/scrub.h): after the git guard,
	 * so that its quarantine is covered too */
	if (r->cloned)
		(void)scrub_session(r->p, r->ss, &r->since);
}

int sandbox_run(const struct aisb_plan *p, struct aisb_session *ss)
{
	struct run r = { .p = p, .ss = ss, .verdict_fd = p->guard_verdict_fd, .term = { .fd = -1 },
			 .go = { .magic = SYNC_MAGIC },
			 .lr = { .watchdog = -1, .watchdog_fd = -1 }, .sync_fds = { -1, -1 }, .err_fds = { -1, -1 },
			 .sfd = -1, .master = -1, .ws_fd = -1, .out_fd = -1, .gate_fds = { -1, -1, -1, -1 },
			 .pasta = { .pid = -1 }, .pid = -1, .tls_pid = -1, .tls_fd = -1 };
	long long start = now_usec();
	struct init_args ia;
	int code;

	(void)clock_gettime(CLOCK_REALTIME, &r.since);
	code = admit_stage(p);
	if (code != 0)
		return code;
	if (session_create(p, ss) < 0)
		return AISB_EXIT_FAILED;
	code = session_stage(&r);
	if (code != 0)
		goto finish;
	terminal_stage(&r.tty_mask, &r.ws_fd, &r.out_fd, &r.go.ws);
	code = AISB_EXIT_FAILED;
	if (channel_stage(&r.mask, &r.oldmask, &r.sfd, r.sync_fds, r.err_fds) < 0)
		goto restore_mask;

	/* a remapped root caller's init and workload must not carry root's supplementary groups
	 * (kgid 0's group bits on the host's files): setgroups is denied inside, so they go here,
	 * from the supervisor, which as root needs none of them */
	if (p->run_uid != p->host_uid && setgroups(0, NULL) < 0) {
		log_error_errno(-errno, "cannot drop the supplementary groups before the sandbox: %m");
		code = AISB_EXIT_ENFORCE;
		goto restore_mask;
	}
	ia = (struct init_args){ .plan = p, .mounts = &r.mp, .sync_fd = r.sync_fds[1], .err_fd = r.err_fds[1],
				 .tty_mask = r.tty_mask, .oldmask = r.oldmask };
	r.pid = clone_stage(&ia, r.sync_fds[0], r.err_fds[0], r.sfd, r.tls_fd, &code);
	if (r.pid < 0)
		goto restore_mask;
	r.cloned = true;
	close(r.sync_fds[1]);
	r.sync_fds[1] = -1;
	close(r.err_fds[1]);
	r.err_fds[1] = -1;
	(void)session_set_init_pid(ss, r.pid);

	/* recorded while init still waits for its maps: nothing of the sandbox has run yet */
	code = pending_stage(&r);
	if (code == 0)
		code = launch_stage(&r);
	if (code == 0)
		code = relay_stage(&r); /* init reaped */
	else
		kill_and_reap(r.pid);
	teardown_stage(&r);
restore_mask:
	release_channels(r.sync_fds, r.err_fds, r.sfd, &r.oldmask);
finish:
	tls_reap(&r.tls_pid, &r.tls_fd);
	code = limits_finish(p, ss, &r.lr, code);
	mount_plan_free(&r.mp);
	mount_host_facts_free(&r.facts);
	free(r.egress_path);
	gitguard_job_free(&r.job);
	session_finish(p, ss, code, start, r.git_quarantined);
	return code;
}
