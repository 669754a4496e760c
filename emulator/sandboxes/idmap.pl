# Re-roots a sandbox on id-mapped copies of its mounts (see jail.ts, idmapMounts). Run by the emulator (real root)
# inside the sandbox's mount namespace, with its root and cwd (nsenter -t <init> -m -r -w):
#   perl -e "$(cat idmap.pl)" apply <fd> +. (+|=)<mount point>...
# <fd> is an open /proc/<pid>/ns/user of the sandbox's user namespace. Mount points are relative to the sandbox's
# root ("." is the root itself), every mount of the sandbox in mount order (parents first), each `+` (id-mapped) or
# `=` (as it is: /proc, /dev/pts...). Each mount is cloned alone (open_tree; the kernel id-maps only a detached mount,
# and only the top of a detached tree), gets the user namespace's id map if `+` (mount_setattr MOUNT_ATTR_IDMAP), and
# the clones are assembled into a new tree that replaces the root for every process of the namespace (move_mount
# over "/", pivot_root). Files keep their ids on disk and show them inside; processes of the user namespace write
# them through the map. Flags (ro, nosuid, nodev...) come with each clone. Any failure exits non-zero before
# pivot_root, every process still on the old root; the emulator then kills the sandbox. x86_64 only (the emulator
# probes only there).
#   perl -e "$(cat idmap.pl)" probe <dir>...
# checks once, in the host's namespaces, that the kernel id-maps a clone of each directory's mount through a fresh
# user namespace mapped like a sandbox's (nothing is attached; the clones vanish with their descriptors).
use strict;
use warnings;
use constant {
  AT_FDCWD => -100,
  AT_EMPTY_PATH => 0x1000,
  AT_SYMLINK_NOFOLLOW => 0x100,
  OPEN_TREE_CLONE => 1,
  O_CLOEXEC => 0x80000,
  O_PATH => 0x200000,
  O_NOFOLLOW => 0x20000,
  RESOLVE_NO_MAGICLINKS => 0x02,
  RESOLVE_NO_SYMLINKS => 0x04,
  RESOLVE_BENEATH => 0x08,
  MOUNT_ATTR_IDMAP => 0x00100000,
  MOVE_MOUNT_F_EMPTY_PATH => 0x04,
  MOVE_MOUNT_T_EMPTY_PATH => 0x40,
  MNT_DETACH => 2,
  # x86_64 system call numbers.
  SYS_CLOSE => 3,
  SYS_EXIT_GROUP => 231,
  SYS_FCHDIR => 81,
  SYS_PIVOT_ROOT => 155,
  SYS_UMOUNT2 => 166,
  SYS_OPEN_TREE => 428,
  SYS_MOVE_MOUNT => 429,
  SYS_OPENAT2 => 437,
  SYS_UNSHARE => 272,
  SYS_MOUNT_SETATTR => 442,
  CLONE_NEWUSER => 0x10000000,
};

# syscall() may write into string arguments, so it is never given a literal.
my ($root, $here, $empty) = ("/", ".", "");
sub sys { my ($what, $ret) = @_; die "$what: $!\n" if $ret < 0; return $ret }
sub idmap_attr { my ($userns_fd) = @_; return pack("QQQQ", MOUNT_ATTR_IDMAP, 0, 0, $userns_fd) }

my $mode = shift @ARGV // "";
if ($mode eq "probe") {
  pipe(my $go, my $go_w) or die "pipe: $!\n";
  pipe(my $ready, my $ready_w) or die "pipe: $!\n";
  my $pid = fork // die "fork: $!\n";
  if (!$pid) {
    close $go_w;
    close $ready;
    syscall(SYS_EXIT_GROUP, 1) if syscall(SYS_UNSHARE, CLONE_NEWUSER) < 0;
    syswrite($ready_w, "u");
    sysread($go, my $byte, 1);
    syscall(SYS_EXIT_GROUP, 0);
  }
  close $go;
  close $ready_w;
  sysread($ready, my $byte, 1) or die "cannot create a user namespace\n";
  for my $map ("uid_map", "gid_map") {
    open(my $fh, ">", "/proc/$pid/$map") or die "$map: $!\n";
    print $fh "0 100000 65536\n";
    close $fh or die "$map: $!\n";
  }
  open(my $ns, "<", "/proc/$pid/ns/user") or die "user namespace: $!\n";
  my $attr = idmap_attr(fileno $ns);
  for my $dir (@ARGV) {
    my $fd = sys("clone $dir", syscall(SYS_OPEN_TREE, AT_FDCWD, my $p = $dir, OPEN_TREE_CLONE | O_CLOEXEC));
    sys("id-mapped mount of $dir", syscall(SYS_MOUNT_SETATTR, $fd, $empty, AT_EMPTY_PATH, $attr, length $attr));
    syscall(SYS_CLOSE, $fd);
  }
  close $go_w;
  waitpid($pid, 0);
  exit 0;
}
die "usage: idmap.pl probe <dir>... | apply <user namespace fd> +. (+|=)<mount point>...\n" unless $mode eq "apply";

my ($userns, @points) = @ARGV;
die "usage: idmap.pl apply <user namespace fd> +. (+|=)<mount point>...\n"
  unless defined $userns && $userns =~ /^\d+$/ && @points && $points[0] eq "+.";
shift @points;

my $attr = idmap_attr($userns);
sub clone {
  my ($path, $idmap) = @_;
  my $fd = sys("clone $path", syscall(SYS_OPEN_TREE, AT_FDCWD, my $p = $path, OPEN_TREE_CLONE | O_CLOEXEC | AT_SYMLINK_NOFOLLOW));
  sys("id-map $path", syscall(SYS_MOUNT_SETATTR, $fd, $empty, AT_EMPTY_PATH, $attr, length $attr)) if $idmap;
  return $fd;
}

# Every clone is taken from the old tree before anything is attached.
my $tree = clone($root, 1);
my @clones = map {
  my ($kind, $point) = /^([+=])(.+)$/ or die "bad mount point $_\n";
  die "bad mount point $_\n" if $point =~ m{^/|(^|/)\.\.?(/|$)};
  [$point, clone("/$point", $kind eq "+")]
} @points;
sys("attach", syscall(SYS_MOVE_MOUNT, $tree, $empty, AT_FDCWD, $root, MOVE_MOUNT_F_EMPTY_PATH));
# Beneath the new root, through no symlink: only this sandbox's own mount points can be reached.
my $how = pack("QQQ", O_PATH | O_CLOEXEC | O_NOFOLLOW, 0, RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
for (@clones) {
  my ($point, $fd) = @$_;
  my $at = sys("open $point", syscall(SYS_OPENAT2, $tree, my $p = $point, $how, length $how));
  sys("mount $point", syscall(SYS_MOVE_MOUNT, $fd, $empty, $at, $empty, MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH));
  syscall(SYS_CLOSE, $at);
}
sys("enter", syscall(SYS_FCHDIR, $tree));
# Every process of the namespace whose root or cwd is the old root moves to the new one; the old root, now stacked
# on top of it, is then detached.
sys("pivot_root", syscall(SYS_PIVOT_ROOT, $here, $here));
sys("detach old root", syscall(SYS_UMOUNT2, $here, MNT_DETACH));
