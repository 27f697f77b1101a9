// SPDX-License-Identifier: GPL-2.0-or-later
/* probe.c — test helper: one system call, its answer on stdout ("ok" or "errN").
 *
 * probe socket FAMILY TYPE PROTOCOL     socket(2), closed again at once (never bound or connected)
 * probe socketpair FAMILY TYPE          socketpair(2)
 * probe personality VALUE               personality(2) (hex or decimal)
 * probe openw PATH                      open(2) O_WRONLY, closed again without writing
 * probe kcmp | pidfd_getfd | process_madvise   on the probe itself (allowed: "ok")
 * probe memwrite                        a child's variable written through /proc/CHILD/mem
 * probe writable DIR...                 how many files directly in the DIRs access(W_OK) accepts
 *                                       (busybox's `test -w` says yes to root without asking)
 * probe mount DIR                       mount(2) a tmpfs on DIR (unmounted again at once)
 * probe umount DIR                      umount2(2) DIR, MNT_DETACH (a cover of /proc, say)
 * probe sethostname NAME                sethostname(2) (CAP_SYS_ADMIN over the UTS namespace)
 * probe setid DIR                       every call that can give a file in DIR a set-id bit, one
 *                                       new file each ("call: answer" lines), then the controls:
 *                                       the same calls without the bit
 * probe forkn N                         forks N children that wait to be killed: "forked N" or
 *                                       "failed after K errN"; then kills and reaps them
 *
 * Linked statically (tests/e2e/Makefile.inc), so that it also runs in a busybox image's
 * `aisb build` RUN step. Exit status 0 unless the usage is wrong: the answer is the output.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/kcmp.h>
#include <linux/openat2.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/personality.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

static int answer(long r)
{
	if (r < 0)
		printf("err%d\n", errno);
	else
		printf("ok\n");
	return 0;
}

static long num(const char *s)
{
	return strtol(s, NULL, 0);
}

/* The parent writes "new" over the child's "old" through /proc/CHILD/mem while the child waits
 * on a pipe; the child reports what it sees. */
static int memwrite(void)
{
	static char word[8] = "old";
	int go[2], back[2];
	char seen[8] = "";
	pid_t pid;
	long r;
	int fd;

	if (pipe(go) < 0 || pipe(back) < 0)
		return 2;
	pid = fork();
	if (pid < 0)
		return 2;
	if (pid == 0) {
		char c;
		if (read(go[0], &c, 1) != 1)
			_exit(1);
		if (write(back[1], word, sizeof(word)) < 0)
			_exit(1);
		_exit(0);
	}
	{
		char path[64];
		snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
		fd = open(path, O_RDWR | O_CLOEXEC);
	}
	r = fd < 0 ? -1 : pwrite(fd, "new", 4, (off_t)(unsigned long)word);
	answer(r);
	if (fd >= 0)
		close(fd);
	if (write(go[1], "x", 1) < 0)
		return 2;
	if (read(back[0], seen, sizeof(seen)) > 0)
		printf("child sees %s\n", seen);
	waitpid(pid, NULL, 0);
	return 0;
}

static int writable(int n, char **dirs)
{
	int count = 0;

	for (int i = 0; i < n; i++) {
		DIR *d = opendir(dirs[i]);
		struct dirent *de;

		if (!d)
			continue;
		while ((de = readdir(d)))
			if (de->d_type == DT_REG && faccessat(dirfd(d), de->d_name, W_OK, 0) == 0)
				count++;
		closedir(d);
	}
	printf("%d\n", count);
	return 0;
}

static void say(const char *what, long r)
{
	printf("%s: ", what);
	answer(r);
}

/* a new regular file DIR/NAME with mode 0755, its fd (or -1) */
static int fresh(int dir, const char *name)
{
	(void)unlinkat(dir, name, 0);
	return openat(dir, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0755);
}

static long chmod_try(int dir, const char *name, mode_t mode, int how)
{
	int fd = fresh(dir, name);
	long r;

	if (fd < 0)
		return -1;
	switch (how) {
	case 0:
		r = fchmodat(dir, name, mode, 0); /* glibc: fchmodat(2) */
		break;
	case 1:
		r = fchmod(fd, mode);
		break;
	default:
		r = syscall(452 /* fchmodat2, Linux 6.6 */, dir, name, mode, 0);
		break;
	}
	close(fd);
	return r;
}

static long open_try(int dir, const char *name, int flags, mode_t mode)
{
	long fd;

	(void)unlinkat(dir, name, 0);
	fd = syscall(SYS_openat, dir, name, flags | O_CLOEXEC, mode);
	if (fd >= 0)
		close((int)fd);
	return fd;
}

static int setid(const char *path)
{
	int dir = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct open_how how = { .flags = O_WRONLY | O_CREAT | O_CLOEXEC, .mode = 04755 };
	long r;

	if (dir < 0 || fchdir(dir) < 0)
		return answer(-1);
	umask(022);
	say("chmod u+s", fresh(dir, "chmod-u") < 0 ? -1 : syscall(SYS_chmod, "chmod-u", 04755));
	say("chmod g+s", fresh(dir, "chmod-g") < 0 ? -1 : syscall(SYS_chmod, "chmod-g", 02755));
	say("fchmodat", chmod_try(dir, "fchmodat", 04755, 0));
	say("fchmod", chmod_try(dir, "fchmod", 06755, 1));
	say("fchmodat2", chmod_try(dir, "fchmodat2", 04755, 2));
	say("openat O_CREAT", open_try(dir, "openat", O_WRONLY | O_CREAT, 04755));
	(void)unlink("open");
	r = syscall(SYS_open, "open", O_WRONLY | O_CREAT | O_CLOEXEC, 02755);
	say("open O_CREAT", r);
	if (r >= 0)
		close((int)r);
	(void)unlink("creat");
	r = syscall(SYS_creat, "creat", 04755);
	say("creat", r);
	if (r >= 0)
		close((int)r);
	r = syscall(SYS_openat, dir, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, 04755);
	say("O_TMPFILE", r);
	if (r >= 0)
		close((int)r);
	(void)unlink("mknod");
	say("mknod", syscall(SYS_mknod, "mknod", S_IFREG | 04755, 0));
	(void)unlinkat(dir, "mknodat", 0);
	say("mknodat", syscall(SYS_mknodat, dir, "mknodat", S_IFREG | 02755, 0));
	(void)unlinkat(dir, "openat2", 0);
	r = syscall(SYS_openat2, dir, "openat2", &how, sizeof(how));
	say("openat2", r);
	if (r >= 0)
		close((int)r);
	/* controls: the same calls give every other mode */
	say("control chmod", fresh(dir, "ctl-chmod") < 0 ? -1 : syscall(SYS_chmod, "ctl-chmod", 0700));
	say("control fchmodat2", chmod_try(dir, "ctl-fchmodat2", 01755, 2));
	say("control openat O_CREAT", open_try(dir, "ctl-openat", O_WRONLY | O_CREAT, 0755));
	/* an existing file, opened with a mode argument that does not count */
	r = syscall(SYS_openat, dir, "ctl-openat", O_WRONLY | O_CLOEXEC, 04755);
	say("control setid without creating", r);
	if (r >= 0)
		close((int)r);
	(void)unlink("ctl-mknod");
	say("control mknod", syscall(SYS_mknod, "ctl-mknod", S_IFIFO | 0600, 0));
	close(dir);
	return 0;
}

/* A fork flood that cleans up after itself (a busybox image has no python3). */
static int forkn(long n)
{
	pid_t *kids = calloc((size_t)(n > 0 ? n : 1), sizeof(*kids));
	long k = 0;
	int e = 0;

	if (!kids)
		return 1;
	for (; k < n; k++) {
		pid_t pid = fork();
		if (pid < 0) {
			e = errno;
			break;
		}
		if (pid == 0) {
			for (;;)
				pause();
		}
		kids[k] = pid;
	}
	if (k == n)
		printf("forked %ld\n", k);
	else
		printf("failed after %ld err%d\n", k, e);
	fflush(stdout);
	for (long i = 0; i < k; i++)
		kill(kids[i], SIGKILL);
	for (long i = 0; i < k; i++)
		waitpid(kids[i], NULL, 0);
	free(kids);
	return 0;
}

int main(int argc, char **argv)
{
	const char *what = argc > 1 ? argv[1] : "";

	if (strcmp(what, "socket") == 0 && argc == 5) {
		long fd = syscall(SYS_socket, num(argv[2]), num(argv[3]), num(argv[4]));
		answer(fd);
		if (fd >= 0)
			close((int)fd);
		return 0;
	}
	if (strcmp(what, "socketpair") == 0 && argc == 4) {
		int sv[2];
		long r = syscall(SYS_socketpair, num(argv[2]), num(argv[3]), 0, sv);
		answer(r);
		if (r == 0) {
			close(sv[0]);
			close(sv[1]);
		}
		return 0;
	}
	if (strcmp(what, "personality") == 0 && argc == 3)
		return answer(syscall(SYS_personality, (unsigned long)strtoul(argv[2], NULL, 0)));
	if (strcmp(what, "openw") == 0 && argc == 3) {
		int fd = open(argv[2], O_WRONLY | O_CLOEXEC);
		answer(fd);
		if (fd >= 0)
			close(fd);
		return 0;
	}
	if (strcmp(what, "kcmp") == 0)
		return answer(syscall(SYS_kcmp, getpid(), getpid(), KCMP_VM, 0, 0));
	if (strcmp(what, "pidfd_getfd") == 0) {
		int pfd = (int)syscall(SYS_pidfd_open, getpid(), 0);
		long fd = pfd < 0 ? -1 : syscall(SYS_pidfd_getfd, pfd, 1, 0);
		answer(fd);
		return 0;
	}
	if (strcmp(what, "process_madvise") == 0) {
		int pfd = (int)syscall(SYS_pidfd_open, getpid(), 0);
		long page = sysconf(_SC_PAGESIZE);
		void *m = mmap(NULL, (size_t)page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		struct iovec iov = { .iov_base = m, .iov_len = (size_t)page };
		return answer(pfd < 0 || m == MAP_FAILED ? -1 : syscall(SYS_process_madvise, pfd, &iov, 1, MADV_COLD, 0));
	}
	if (strcmp(what, "memwrite") == 0)
		return memwrite();
	if (strcmp(what, "writable") == 0)
		return writable(argc - 2, argv + 2);
	if (strcmp(what, "mount") == 0 && argc == 3) {
		int r = mount("none", argv[2], "tmpfs", 0, NULL);
		answer(r);
		if (r == 0)
			(void)umount2(argv[2], MNT_DETACH);
		return 0;
	}
	if (strcmp(what, "sethostname") == 0 && argc == 3)
		return answer(sethostname(argv[2], strlen(argv[2])));
	if (strcmp(what, "forkn") == 0 && argc == 3)
		return forkn(strtol(argv[2], NULL, 10));
	if (strcmp(what, "umount") == 0 && argc == 3)
		return answer(umount2(argv[2], MNT_DETACH));
	if (strcmp(what, "setid") == 0 && argc == 3)
		return setid(argv[2]);
	fprintf(stderr, "usage: probe socket|socketpair|personality|openw|kcmp|pidfd_getfd|process_madvise|memwrite|writable|mount|umount|sethostname|forkn|setid ...\n");
	return 2;
}
