/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <string.h>

#include "model/language.h"
#include "sandbox-root.h"
#include "util.h"

#define ETC_LINK(name, why)                                                                             \
        { ROOT_SYMLINK, "etc/" name, 0, "/usr/" USR_LAYER_ETC "/" name, false, why }

const RootEntry sandbox_root_entries[] = {
        /* Mount points: systemd binds and mounts onto these. */
        { ROOT_DIR, "usr", 0755, NULL, false, "the /usr overlay" },
        { ROOT_DIR, "etc", 0755, NULL, false, "the entries below, nothing else of the host's /etc" },
        { ROOT_DIR, "proc", 0755, NULL, false, "the sandbox's own /proc (MountAPIVFS=)" },
        { ROOT_DIR, "dev", 0755, NULL, false, "the sandbox's own /dev (PrivateDevices=)" },
        { ROOT_DIR, "run", 0755, NULL, false, "a private tmpfs: sandbox-exec's directory" },
        { ROOT_DIR, "sys", 0755, NULL, false, "bound over systemd's sysfs: an empty /sys" },
        { ROOT_DIR, "sys/fs", 0555, NULL, false, "ProtectControlGroups= remounts sys/fs/cgroup read-only" },
        { ROOT_DIR, "sys/fs/cgroup", 0555, NULL, false, "... an empty directory: no cgroupfs in the sandbox" },
        { ROOT_DIR, "var", 0755, NULL, false, "holds var/tmp" },
        { ROOT_DIR, "var/tmp", 0755, NULL, false, "the execution's tmpfs, like /tmp" },
        { ROOT_DIR, "var/lib", 0755, NULL, true,
          "systemd binds a session's StateDirectory= below it (sandbox-exec detaches them)" },
        /* Merged /usr, as on the host. */
        { ROOT_SYMLINK, "bin", 0, "usr/bin", false, "merged /usr" },
        { ROOT_SYMLINK, "sbin", 0, "usr/sbin", false, "merged /usr" },
        { ROOT_SYMLINK, "lib", 0, "usr/lib", false, "merged /usr" },
        { ROOT_SYMLINK, "lib64", 0, "usr/lib64", false, "merged /usr" },
        /* /etc: synthetic, or the runtime's files from the layer. */
        { ROOT_SYMLINK, "etc/passwd", 0, SANDBOX_CODE_DIR "/passwd", false,
          "root, nobody and the program's own user, written by sandbox-exec once it knows the UID" },
        { ROOT_SYMLINK, "etc/group", 0, SANDBOX_CODE_DIR "/group", false, "likewise" },
        { ROOT_FILE, "etc/hosts", 0644, "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n", false,
          "loopback only: no host or network names" },
        { ROOT_FILE, "etc/nsswitch.conf", 0644,
          "passwd: files\ngroup: files\nshadow: files\nhosts: files\nnetworks: files\nprotocols: files\n"
          "services: files\nethers: files\nrpc: files\nnetgroup: files\n",
          false, "files only: no NSS module that would try to reach a host service" },
        { ROOT_SYMLINK, "etc/localtime", 0, "/usr/share/zoneinfo/Etc/UTC", false, "UTC, like TZ=" },
        { ROOT_SYMLINK, "etc/os-release", 0, "../usr/lib/os-release", false, "the runtime's OS, from /usr" },
        ETC_LINK("ld.so.cache", "the dynamic linker finds the runtimes' libraries (numpy's BLAS)"),
        ETC_LINK("alternatives", "awk, editor and friends are alternatives symlinks"),
        ETC_LINK("ssl", "CA certificates for TLS clients"),
        ETC_LINK("mime.types", "Python's mimetypes"),
        ETC_LINK("services", "getservbyname()"),
        ETC_LINK("protocols", "getprotobyname()"),
        ETC_LINK("python3", "Debian's Python configuration"),
        ETC_LINK("python3.11", "Debian's sitecustomize for Python 3.11"),
        ETC_LINK("java-17-openjdk", "the JDK's conf/ and lib/ files (java.security, jvm.cfg) are symlinks here"),
        ETC_LINK("R", "R_HOME/etc (ldpaths, Renviron, Rprofile.site) are symlinks here"),
};
const size_t sandbox_root_n_entries = ELEMENTSOF(sandbox_root_entries);

const EtcEntry usr_layer_etc_entries[] = {
        { "ld.so.cache", "library search cache" },
        { "alternatives", "update-alternatives symlinks" },
        { "ssl", "certificates (never ssl/private)" },
        { "mime.types", "media types" },
        { "services", "port names" },
        { "protocols", "protocol names" },
        { "python3", "Debian's Python configuration" },
        { "python3.11", "Debian's sitecustomize" },
        { "java-17-openjdk", "OpenJDK 17's configuration (no keys: the keystore is /etc/ssl's)" },
        { "R", "R's configuration" },
};
const size_t usr_layer_n_etc_entries = ELEMENTSOF(usr_layer_etc_entries);

bool usr_layer_etc_skip(const char *relative_path) {
        /* Private keys of the host: never into a sandbox, even unreadable. */
        return streq(relative_path, "ssl/private") || startswith(relative_path, "ssl/private/");
}

const char *const usr_layer_hidden[] = {
        "local",
        "sbin/sandboxd",
        "bin/sandboxctl",
        "libexec/sandboxd",
        "lib/sandboxd",
        "share/doc/sandboxd",
        "share/man/man1/sandboxctl.1.gz",
        "share/man/man5/sandboxd.conf.5.gz",
        "share/man/man8/sandboxd.8.gz",
        "share/dbus-1/system.d/io.sandboxd.Sandbox1.conf",
        "share/polkit-1/actions/io.sandboxd.Sandbox1.policy",
        "share/polkit-1/rules.d/io.sandboxd.Sandbox1.rules",
        "lib/systemd/system/sandboxd.service",
        "lib/systemd/system/sandboxd.slice",
        "lib/systemd/system/sandboxd.socket",
        "lib/modules-load.d/sandboxd.conf",
};
const size_t usr_layer_n_hidden = ELEMENTSOF(usr_layer_hidden);
