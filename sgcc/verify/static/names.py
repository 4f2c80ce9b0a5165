"""Symbol names the verifier treats specially: what a candidate may newly import, and what
it may not define."""

from __future__ import annotations

#: New external symbols a candidate may reference: memory and string routines gcc itself
#: emits calls to (block moves, ``__builtin_*`` expansions), their fortified ``_chk``
#: variants, and the stack-protector failure path. None of them can start a process, open a
#: file or talk to the network.
DEFAULT_ALLOWED_EXTERNALS = frozenset(
    {
        "memcpy", "memmove", "memset", "memcmp", "strlen", "strcmp", "strncmp", "strchr",
        "__memcpy_chk", "__memmove_chk", "__memset_chk", "__stack_chk_fail",
    }
)

#: Names a candidate may not define (labels, ``.set``, ``=``) unless the caller says so:
#: defining them interposes on the C library or the startup code for the whole program.
RESERVED_NAMES = frozenset(
    """
    system execve execv execvp execvpe execl execlp execle fexecve posix_spawn posix_spawnp
    fork vfork clone popen pclose open open64 openat creat read write pread pwrite readv
    writev close dup dup2 pipe socket connect bind listen accept accept4 send sendto sendmsg
    recv recvfrom recvmsg mmap mmap64 mprotect munmap mremap brk sbrk malloc calloc realloc
    free memalign posix_memalign aligned_alloc valloc exit _exit _Exit abort atexit
    at_quick_exit on_exit quick_exit printf fprintf sprintf snprintf vprintf vfprintf
    vsprintf vsnprintf dprintf puts fputs putchar fputc putc fwrite fread fopen fdopen
    freopen fclose fflush getchar getc fgetc fgets gets scanf fscanf sscanf ungetc setvbuf
    setbuf memcpy memmove memset memcmp bcmp strlen strcmp strncmp strchr strrchr strcpy
    strncpy strcat strncat strdup strstr dlopen dlsym dlclose signal sigaction raise kill
    ptrace syscall setuid setgid seteuid setegid setresuid setresgid chdir chroot chmod
    unlink rename getenv setenv putenv environ __environ stdin stdout stderr errno
    __errno_location __stack_chk_fail __stack_chk_guard __libc_start_main __libc_csu_init
    __libc_csu_fini __cxa_atexit __cxa_finalize __gmon_start__ __dso_handle _start _init
    _fini _GLOBAL_OFFSET_TABLE_ _DYNAMIC __ehdr_start __executable_start __bss_start _edata
    _end etext edata end __data_start data_start _IO_stdin_used __tls_get_addr
    """.split()
)
_RESERVED_PREFIXES = (
    "__libc_", "_dl_", "__init_array", "__fini_array", "__preinit_array", "_IO_", "__GI_",
    "_ITM_", "__TMC_", "__x86.", "__morestack", "__gcc_personality", "__sanitizer",
)


def reserved(name: str) -> bool:
    """Whether defining ``name`` would interpose on the C library or the startup code."""
    return name in RESERVED_NAMES or name.startswith(_RESERVED_PREFIXES)
