/* The box's P and init in C (see sgcc/verify/isolate.py for the design; this does the same
 * steps as its Python child functions, which remain the fallback).
 *
 * Why a C helper: every run forks twice inside the box (P -> init -> main). Forking the
 * Python process costs milliseconds per fork on small machines; this helper is started with
 * vfork+exec by subprocess and forks a process of a few hundred kilobytes.
 *
 * argv: REPORT_FD PARENT_PID OUTER_UID OUTER_GID INNER_UID INNER_GID MEMORY FILTER_HEX
 *       CPU AS FSIZE NPROC NOFILE CORE  OPS...  --  PROGRAM ARGV...
 * (a limit of -1 is left alone; MEMORY 0 means no run-wide memory watch).
 * OPS, each a keyword and its arguments: tmpfs PATH SIZE | symlink TARGET LINK | dir PATH MODE
 * | file PATH TEXT | bind SRC DST RW | bindfile SRC DST RW | self PATH | proc PATH
 * (a bind's SRC /proc/self/fd/N: a detached mount sgcc made with open_tree, attached with move_mount)
 * | hostname NAME | pivot PATH | readonly_root | chdir PATH
 * Report on REPORT_FD: "ok WAITSTATUS USER SYS MAXRSS NOTES..." | "exec ERRNO" | "error TEXT".
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int report_fd = -1;

static void fail(const char *what) {
    dprintf(report_fd, "error %s: %s\n", what, strerror(errno));
    _exit(125);
}

static void write_file(const char *path, const char *text) {
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0 || write(fd, text, strlen(text)) < 0) fail(path);
    close(fd);
}

static void remount(const char *path, int readonly, int nodev) {
    struct statvfs sv;
    if (statvfs(path, &sv) != 0) fail("statvfs");
    unsigned long flags = MS_REMOUNT | MS_BIND | MS_NOSUID;
    if (sv.f_flag & ST_NOEXEC) flags |= MS_NOEXEC;
    if (sv.f_flag & ST_NOATIME) flags |= MS_NOATIME;
    if (sv.f_flag & ST_NODIRATIME) flags |= MS_NODIRATIME;
    if (sv.f_flag & ST_RELATIME) flags |= MS_RELATIME;
    if ((sv.f_flag & ST_NODEV) || nodev) flags |= MS_NODEV;
    if (readonly) flags |= MS_RDONLY;
    if (mount(NULL, path, NULL, flags, NULL) != 0) fail("remount");
}

static void make_dirs(const char *path) {
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf + 1; *p; p++) {
        if (*p == '/') { *p = 0; mkdir(buf, 0755); *p = '/'; }
    }
    if (mkdir(buf, 0755) != 0 && errno != EEXIST) fail("mkdir");
}

static void parent_dirs(const char *path) {
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", path);
    char *slash = strrchr(buf, '/');
    if (slash && slash != buf) { *slash = 0; make_dirs(buf); }
}

/* Returns 1 if the fresh /proc could not be mounted. */
static int do_mounts(char **ops, int n) {
    int noproc = 0;
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0) fail("make / private");
    for (int i = 0; i < n;) {
        const char *k = ops[i++];
        if (!strcmp(k, "tmpfs")) {
            char data[128];
            snprintf(data, sizeof data, "size=%s,nr_inodes=16384,mode=0755", ops[i + 1]);
            if (mount("tmpfs", ops[i], "tmpfs", MS_NOSUID | MS_NODEV, data) != 0) fail("tmpfs");
            i += 2;
        } else if (!strcmp(k, "symlink")) {
            if (symlink(ops[i], ops[i + 1]) != 0) fail("symlink");
            i += 2;
        } else if (!strcmp(k, "dir")) {
            make_dirs(ops[i]);
            if (chmod(ops[i], (mode_t)strtol(ops[i + 1], NULL, 8)) != 0) fail("chmod");
            i += 2;
        } else if (!strcmp(k, "file")) {
            int fd = open(ops[i], O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
            if (fd < 0 || write(fd, ops[i + 1], strlen(ops[i + 1])) < 0) fail("file");
            close(fd);
            i += 2;
        } else if (!strcmp(k, "bind") || !strcmp(k, "bindfile")) {
            const char *src = ops[i], *dst = ops[i + 1];
            int rw = atoi(ops[i + 2]), dir = !strcmp(k, "bind");
            i += 3;
            if (dir) make_dirs(dst);
            else {
                parent_dirs(dst);
                int fd = open(dst, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
                if (fd < 0) fail("bind target");
                close(fd);
            }
            if (!strncmp(src, "/proc/self/fd/", 14)) {
                /* A detached copy of a mount the box's user cannot reach (open_tree, by sgcc):
                 * attached here, its descriptor goes (the run sees the mount, never the way to it). */
                int fd = atoi(src + 14);
                if (syscall(SYS_move_mount, fd, "", AT_FDCWD, dst, 4 /* MOVE_MOUNT_F_EMPTY_PATH */) != 0) {
                    dprintf(report_fd, "error attach %s: %s\n", src, strerror(errno));
                    _exit(125);
                }
                close(fd);
            } else if (mount(src, dst, NULL, MS_BIND | MS_REC, NULL) != 0) {
                dprintf(report_fd, "error bind %s: %s\n", src, strerror(errno));
                _exit(125);
            }
            remount(dst, !rw, dir || !rw);
        } else if (!strcmp(k, "self")) {
            if (mount(ops[i], ops[i], NULL, MS_BIND | MS_REC, NULL) != 0) fail("self bind");
            i += 1;
        } else if (!strcmp(k, "proc")) {
            if (mount("proc", ops[i], "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) != 0) noproc = 1;
            i += 1;
        } else if (!strcmp(k, "hostname")) {
            if (sethostname(ops[i], strlen(ops[i])) != 0) fail("sethostname");
            i += 1;
        } else if (!strcmp(k, "pivot")) {
            if (chdir(ops[i]) != 0) fail("chdir new root");
            if (syscall(SYS_pivot_root, ".", ".") != 0) fail("pivot_root");
            if (umount2(".", MNT_DETACH) != 0) fail("detach the old root");
            if (chdir("/") != 0) fail("chdir /");
            i += 1;
        } else if (!strcmp(k, "readonly_root")) {
            if (mount(NULL, "/", NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV, NULL) != 0)
                fail("read-only /");
        } else if (!strcmp(k, "chdir")) {
            if (chdir(ops[i]) != 0) fail("chdir");
            i += 1;
        } else {
            errno = EINVAL;
            fail(k);
        }
    }
    return noproc;
}

static int over_memory(long long limit) {
    DIR *d = opendir("/proc");
    if (!d) return 0;
    long page = sysconf(_SC_PAGESIZE);
    long long total = 0;
    int count = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9' || !strcmp(e->d_name, "1")) continue;
        count++;
        char path[64];
        snprintf(path, sizeof path, "/proc/%s/statm", e->d_name);
        FILE *f = fopen(path, "re");
        if (!f) continue;
        long long size, resident;
        if (fscanf(f, "%lld %lld", &size, &resident) == 2) total += resident * page;
        fclose(f);
    }
    closedir(d);
    return count >= 2 && total > limit;
}

static unsigned char filter_code[4096];
extern char **environ;

/* execvp without its fallback of running a non-executable file with /bin/sh (ENOEXEC must
 * fail the run), and stopping at the first PATH entry where the name exists: a binary that
 * cannot be executed fails the run, it never lets a system program of the same name (a world
 * called "test" has /usr/bin/test after it) run in its place. */
static void exec_program(char **prog) {
    if (strchr(prog[0], '/')) {
        execve(prog[0], prog, environ);
        return;
    }
    const char *path = getenv("PATH");
    if (!path) path = "/usr/bin:/bin";
    for (const char *p = path;;) {
        const char *end = strchrnul(p, ':');
        char buf[4096];
        if (end == p) snprintf(buf, sizeof buf, "./%s", prog[0]); /* an empty entry is "." */
        else snprintf(buf, sizeof buf, "%.*s/%s", (int)(end - p), p, prog[0]);
        execve(buf, prog, environ);
        if (errno != ENOENT && errno != ENOTDIR) return;
        if (!*end) break;
        p = end + 1;
    }
    errno = ENOENT;
}

static void run_main(int err_fd, size_t filter_len, long long *lim, char **prog) {
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    signal(SIGPIPE, SIG_DFL);
    signal(SIGXFSZ, SIG_DFL);
    signal(SIGCHLD, SIG_DFL);
    close(report_fd);
    static const int which[6] = {RLIMIT_CPU, RLIMIT_AS, RLIMIT_FSIZE, RLIMIT_NPROC, RLIMIT_NOFILE, RLIMIT_CORE};
    int err = 0;
    for (int k = 0; k < 6 && !err; k++) {
        if (lim[k] < 0) continue;
        struct rlimit rl = {(rlim_t)lim[k], (rlim_t)lim[k] + (which[k] == RLIMIT_CPU ? 1 : 0)};
        if (setrlimit(which[k], &rl) != 0) err = errno;
    }
    /* Uid 0 inside keeps no capabilities across exec; nothing gains any afterwards. */
    if (!err && prctl(PR_SET_SECUREBITS, 3, 0, 0, 0) != 0) err = errno;
    if (!err && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) err = errno;
    struct sock_fprog fp = {(unsigned short)(filter_len / 8), (struct sock_filter *)filter_code};
    if (!err && prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &fp, 0, 0) != 0) err = errno;
    if (!err) {
        exec_program(prog);
        err = errno;
    }
    dprintf(err_fd, "%d", err ? err : 1);
    _exit(127);
}

static void run_init(char **ops, int nops, char **prog_in, int nprog, long long memory, size_t filter_len,
                     long long *lim, char *args_start, char *args_end) {
    prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
    /* Init is pid 1 of the run's /proc: undumpable (the run cannot read its memory or files),
     * its arguments (paths of sgcc's) wiped and its name plain. */
    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    prctl(PR_SET_NAME, "init", 0, 0, 0);
    int noproc = do_mounts(ops, nops);
    char **prog = calloc((size_t)nprog + 1, sizeof *prog);
    for (int k = 0; k < nprog; k++) prog[k] = strdup(prog_in[k]);
    memset(args_start, 0, (size_t)(args_end - args_start));
    strcpy(args_start, "init");

    sigset_t chld;
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    sigprocmask(SIG_BLOCK, &chld, NULL);
    int ep[2];
    if (pipe2(ep, O_CLOEXEC) != 0) fail("pipe");
    pid_t main_pid = fork();
    if (main_pid < 0) fail("fork");
    if (main_pid == 0) run_main(ep[1], filter_len, lim, prog);
    close(ep[1]);
    close(0);
    close(1);
    close(2);
    char buf[32];
    ssize_t got;
    while ((got = read(ep[0], buf, sizeof buf - 1)) < 0 && errno == EINTR) {}
    if (got > 0) {
        buf[got] = 0;
        dprintf(report_fd, "exec %s\n", buf);
        _exit(1);
    }
    close(ep[0]);

    char notes[64] = "";
    int watch = memory > 0 && !noproc, have = 0, status = 9;
    if (noproc) strcat(notes, " noproc");
    while (!have) {
        int none_left = 0;
        for (;;) {
            int st;
            pid_t p = waitpid(-1, &st, WNOHANG);
            if (p < 0) { if (errno == EINTR) continue; none_left = 1; break; }
            if (p == 0) break;
            if (p == main_pid) { status = st; have = 1; break; }
        }
        if (have || none_left) break;
        if (watch) {
            struct timespec ts = {0, 50 * 1000 * 1000};
            if (sigtimedwait(&chld, NULL, &ts) < 0 && errno == EAGAIN && over_memory(memory)) {
                if (!strstr(notes, "memory")) strcat(notes, " memory");
                kill(-1, SIGKILL);
            }
        } else {
            sigwaitinfo(&chld, NULL);
        }
    }
    /* The run ends with its main process: whatever it left behind dies now, unread. */
    kill(-1, SIGKILL);
    for (;;) {
        if (waitpid(-1, NULL, 0) < 0) {
            if (errno == EINTR) continue;
            break;
        }
    }
    struct rusage ru;
    getrusage(RUSAGE_CHILDREN, &ru);
    dprintf(report_fd, "ok %d %ld.%06ld %ld.%06ld %ld%s\n", status, (long)ru.ru_utime.tv_sec, (long)ru.ru_utime.tv_usec,
            (long)ru.ru_stime.tv_sec, (long)ru.ru_stime.tv_usec, ru.ru_maxrss, notes);
    _exit(0);
}

static int hexdigit(char c) {
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

int main(int argc, char **argv) {
    if (argc < 16) return 125;
    int i = 1;
    report_fd = atoi(argv[i++]);
    pid_t parent = (pid_t)atol(argv[i++]);
    uid_t ou = (uid_t)atol(argv[i++]);
    gid_t og = (gid_t)atol(argv[i++]);
    uid_t iu = (uid_t)atol(argv[i++]);
    gid_t ig = (gid_t)atol(argv[i++]);
    long long memory = atoll(argv[i++]);
    const char *hex = argv[i++];
    size_t filter_len = strlen(hex) / 2;
    if (filter_len > sizeof filter_code || filter_len % 8) { errno = EINVAL; fail("filter"); }
    for (size_t k = 0; k < filter_len; k++) {
        int hi = hexdigit(hex[2 * k]), lo = hexdigit(hex[2 * k + 1]);
        if (hi < 0 || lo < 0) { errno = EINVAL; fail("filter"); }
        filter_code[k] = (unsigned char)(hi * 16 + lo);
    }
    long long lim[6];
    for (int k = 0; k < 6; k++) lim[k] = atoll(argv[i++]);
    char **ops = &argv[i];
    int nops = 0;
    while (i + nops < argc && strcmp(argv[i + nops], "--")) nops++;
    if (i + nops >= argc - 1) { errno = EINVAL; fail("no program"); }
    char **prog = &argv[i + nops + 1];
    int nprog = argc - (i + nops + 1);

    if (getuid() == 0) {
        if (setgroups(0, NULL) != 0 || setresgid(og, og, og) != 0 || setresuid(ou, ou, ou) != 0) fail("drop to nobody");
        /* Changing uid made the process undumpable, which makes its /proc files root's. */
        prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
    }
    if (unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWNET) != 0)
        fail("unshare");
    char map[64];
    write_file("/proc/self/setgroups", "deny");
    snprintf(map, sizeof map, "%u %u 1", iu, ou);
    write_file("/proc/self/uid_map", map);
    snprintf(map, sizeof map, "%u %u 1", ig, og);
    write_file("/proc/self/gid_map", map);
    /* Only now: changing credentials (setuid, unshare) clears the parent-death signal. */
    prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
    if (getppid() != parent) _exit(125);
    pid_t init = fork();
    if (init < 0) fail("fork");
    if (init == 0) run_init(ops, nops, prog, nprog, memory, filter_len, lim, argv[0], argv[argc - 1] + strlen(argv[argc - 1]));
    close(0);
    close(1);
    close(2);
    close(report_fd);
    int st;
    while (waitpid(init, &st, 0) < 0 && errno == EINTR) {}
    _exit(WIFEXITED(st) ? WEXITSTATUS(st) : 125);
}
