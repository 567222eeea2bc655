#!/usr/bin/env bash
# Builds savechain in release and installs it for C and C++ programs and for the shell:
# the header, the shared library (soname libsavechain.so.<ABI>) and the static one, the
# pkg-config file, the CMake package, the save-upgrade command with its completions and
# man page. Everything is built and laid out in a scratch folder first: a build that
# fails installs nothing. Each file then goes into place by a rename, so a program running
# with the old library keeps its mapping. `./install.sh --help` says how to call it.
set -euo pipefail

usage() {
    cat <<'EOF'
Usage: ./install.sh [--prefix DIR]

Builds savechain (cargo build --release --locked) and installs into DIR (default
/usr/local):
  bin/save-upgrade
  include/savechain.h
  lib/libsavechain.so.X.Y.Z, lib/libsavechain.so.ABI, lib/libsavechain.so
  lib/libsavechain.a
  lib/pkgconfig/savechain.pc
  lib/cmake/savechain/ (find_package(savechain): savechain::savechain, the shared
    library, and savechain::savechain_static)
  share/bash-completion/completions/save-upgrade
  share/zsh/site-functions/_save-upgrade
  share/fish/vendor_completions.d/save-upgrade.fish
  share/man/man1/save-upgrade.1

Libraries and the command are installed stripped. DESTDIR, when set, is put before every
installed path (not in the paths written into the files), as packagers expect. CARGO_TARGET_DIR and
STRIP (default: strip) are honoured.

Options:
  --prefix DIR   where to install (made absolute from the current folder)
  -h, --help     this text
EOF
}

fail() {
    echo "install.sh: $*" >&2
    exit 2
}

prefix=/usr/local
while [[ $# -gt 0 ]]; do
    case $1 in
        --prefix)
            [[ $# -ge 2 && -n $2 ]] || fail "--prefix needs a folder (--help says more)"
            prefix=$2
            shift 2
            ;;
        --prefix=*)
            prefix=${1#--prefix=}
            [[ -n $prefix ]] || fail "--prefix needs a folder (--help says more)"
            shift
            ;;
        -h | --help)
            usage
            exit 0
            ;;
        *)
            echo "install.sh: unknown option '$1'" >&2
            usage >&2
            exit 2
            ;;
    esac
done
[[ $prefix == /* ]] || prefix="$PWD/$prefix"
prefix=${prefix%/}
destdir=${DESTDIR:-}
strip=${STRIP:-strip}

root=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cd "$root"

# Build. Two cargo runs, not one: in one, Cargo would unify the library's features
# between the command line and the C library, and compile the command line's crates
# into the C library's build of savechain.
cargo build --release --locked --bin save-upgrade || fail "cargo could not build save-upgrade: nothing installed"
cargo build --release --locked -p savechain-c || fail "cargo could not build the C library: nothing installed"

target=${CARGO_TARGET_DIR:-}
if [[ -z $target ]]; then
    target=$(cargo metadata --format-version 1 --no-deps --locked |
        sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')
fi
release="$target/release"
shared="$release/libsavechain_c.so"
static="$release/libsavechain_c.a"
command="$release/save-upgrade"
for built in "$shared" "$static" "$command"; do
    [[ -f $built ]] || fail "cargo did not make $built"
done

# Names: the version is the crate's; the ABI is the number of the soname c-abi/build.rs
# gave the library.
pkgid=$(cargo pkgid --locked -p savechain-c)
version=${pkgid##*[#@]}
[[ $version =~ ^([0-9]+)\.([0-9]+)\.([0-9]+)$ ]] || fail "no version in '$pkgid'"
major=${BASH_REMATCH[1]}
minor=${BASH_REMATCH[2]}
soname=$(readelf -d "$shared" | sed -n 's/.*Library soname: \[\(.*\)\].*/\1/p')
[[ $soname =~ ^libsavechain\.so\.([0-9]+)$ ]] || fail "$shared has no soname libsavechain.so.<ABI> (it has '$soname')"
abi=${BASH_REMATCH[1]}
# The real file's name carries the ABI and the whole version, so that a later release's
# file always sorts after an earlier one's with the same ABI (ldconfig points the soname at
# the highest) and no two releases share a name.
real="libsavechain.so.$abi.$version"

# What the static library needs from the system besides: rustc's native-static-libs on
# glibc, less its Lua (inside the archive) and what every C compiler links anyway (-lc,
# -lgcc_s, which a fully static link (-static) could not even find).
libs_private="-lutil -lrt -lpthread -lm -ldl"

# The pointer size the CMake package checks a project against: the built library's.
case $(readelf -h "$shared" | sed -n 's/^ *Class: *//p') in
    ELF64) bits=64 ;;
    ELF32) bits=32 ;;
    *) fail "cannot tell whether $shared is 32 or 64 bits" ;;
esac

# A stop (Ctrl-C, a scheduler's SIGTERM) ends through the EXIT trap too, which removes the
# scratch folder and a copy not yet renamed into place.
stage=""
temporary=""
trap '[[ -z $stage ]] || rm -rf "$stage"; [[ -z $temporary ]] || rm -f "$temporary"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
stage=$(mktemp -d)
mkdir -p "$stage"/{bin,include,lib/pkgconfig,lib/cmake/savechain} \
    "$stage"/share/{bash-completion/completions,zsh/site-functions,fish/vendor_completions.d,man/man1}

install -m 755 "$command" "$stage/bin/save-upgrade"
"$strip" "$stage/bin/save-upgrade"
install -m 644 c-abi/include/savechain.h "$stage/include/savechain.h"
install -m 755 "$shared" "$stage/lib/$real"
# Debug information goes, the symbol table stays (4 MB, not 3.5): a crash's backtrace and
# c-abi/valgrind.supp name the library's functions.
"$strip" --strip-debug "$stage/lib/$real"
ln -s "$real" "$stage/lib/libsavechain.so.$abi"
ln -s "libsavechain.so.$abi" "$stage/lib/libsavechain.so"
install -m 644 "$static" "$stage/lib/libsavechain.a"
"$strip" --strip-debug "$stage/lib/libsavechain.a"

# The completions and the man page, from the command's own definitions.
generate() {
    "$stage/bin/save-upgrade" --generate "$1" >"$2" ||
        fail "save-upgrade --generate $1 failed"
}
generate complete-bash "$stage/share/bash-completion/completions/save-upgrade"
generate complete-zsh "$stage/share/zsh/site-functions/_save-upgrade"
generate complete-fish "$stage/share/fish/vendor_completions.d/save-upgrade.fish"
generate man "$stage/share/man/man1/save-upgrade.1"

# The templates of c-abi/install/, filled in; the prefix escaped for sed's replacement.
sed_prefix=$(printf '%s' "$prefix" | sed -e 's/[\\|&]/\\&/g')
fill() {
    sed -e "s|@PREFIX@|$sed_prefix|g" -e "s|@VERSION@|$version|g" \
        -e "s|@VERSION_MAJOR@|$major|g" -e "s|@VERSION_MINOR@|$minor|g" \
        -e "s|@ABI@|$abi|g" -e "s|@REAL_VERSION@|$abi.$version|g" \
        -e "s|@LIBS_PRIVATE@|$libs_private|g" \
        -e "s|@CMAKE_LIBS_PRIVATE@|${libs_private// /;}|g" \
        -e "s|@SIZEOF_VOID_P@|$((bits / 8))|g" -e "s|@BITS@|$bits|g" \
        "c-abi/install/$1" >"$2"
}
fill savechain.pc.in "$stage/lib/pkgconfig/savechain.pc"
fill savechainConfig.cmake "$stage/lib/cmake/savechain/savechainConfig.cmake"
fill savechainConfigVersion.cmake.in "$stage/lib/cmake/savechain/savechainConfigVersion.cmake"
fill savechainTargets.cmake.in "$stage/lib/cmake/savechain/savechainTargets.cmake"

# Into place: each file copied beside its destination and renamed over it; the files
# first, then the links, so that no link ever points at a file not there yet (a new
# release's libsavechain.so.0 at its libsavechain.so.0.X.Y.Z), even if a copy fails.
dest="$destdir$prefix"
cd "$stage"
place() {
    while IFS= read -r -d '' path; do
        path=${path#./}
        mkdir -p "$dest/$(dirname "$path")"
        temporary="$dest/$(dirname "$path")/.$(basename "$path").installing"
        cp -P --preserve=mode "$path" "$temporary"
        mv -fT "$temporary" "$dest/$path"
        temporary=""
    done < <(find . -type "$1" -print0 | sort -z)
}
place f
place l
echo "install.sh: savechain $version installed into $dest" >&2
# The loader finds a library of /usr/local/lib only once ldconfig has cached it.
if [[ -z $destdir ]] && ! { /sbin/ldconfig -p 2>/dev/null || ldconfig -p 2>/dev/null; } |
    grep -qF "=> $prefix/lib/libsavechain.so.$abi"; then
    echo "install.sh: programs find $prefix/lib/libsavechain.so.$abi through a run path" \
        "(CMake gives one; with pkg-config, -Wl,-rpath,$prefix/lib), or, for a folder the" \
        "loader searches (/etc/ld.so.conf), once 'ldconfig' has run as root" >&2
fi
