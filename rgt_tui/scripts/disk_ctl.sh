#!/usr/bin/env bash
# rgt-tui's box-side disk audit and delete: rgt_tui/services/disk/audit.py and
# disk_reclaim.py send this whole file as `bash -c <this file> disk_ctl VERB ARGS...`
# with paths on stdin, never on a command line. It is never deployed to the box.
#
#   audit SECONDS DEPTH TOP    stdin: "KIND<TAB>PATH" records, each ended by a NUL
#       KIND: mount (du its largest folders), pull (a pull root), hf (a Hugging Face hub
#       folder), cell (a cell's output folder: list its checkpoints), any other KIND
#       (durable: the durable folder) only resolved. A leading ~ is $HOME;
#       the literal $HF_HUB_CACHE and $HF_HOME/hub are read from this box's environment.
#   delete DEV INO TYPE [listed]   stdin: one absolute PATH ended by a NUL; TYPE: d or f.
#       With "listed" (a folder of results), then "SIZE<TAB>MTIME<TAB>REL" records, each
#       ended by a NUL: only those files (the ones checked as pulled and verified, by size
#       and whole-second mtime) are removed, then the folders left empty; anything else
#       (written since the check) stays, the folder is put back, and "kept" names it.
#
# Output: records ended by a NUL, fields split by TABs, any path LAST (a name may hold a
# tab or a newline; it cannot hold a NUL):
#   home PATH | boxid ID | root IDX KIND RESOLVED | missing IDX KIND
#   du IDX B|I VALUE DEV INO PATH          the TOP largest folders by bytes (B), inodes (I)
#   cut IDX B|I WHY                        that du stopped early (timeout) or failed
#   hf IDX BYTES INODES DEV INO PATH       one models--ORG--NAME folder
#   ckpt IDX MTIME SIZE DEV INO PATH       one checkpoint file of a cell
# Every walk is bounded by `timeout SECONDS`, stays on one file system (-x / -xdev) and
# never follows a link (du and find do not by default). A delete refusal prints
# "refused<TAB>CODE<TAB>DETAIL" (newline-ended, like queue_ctl.sh) and exits 3.
set -u
set -f
export LC_ALL=C

verb=${1:-}
shift || true

refuse() {  # CODE DETAIL
    printf 'refused\t%s\t%s\n' "$1" "$2"
    exit 3
}

expand() {  # PATH -> the path with a leading ~ replaced by $HOME
    case "$1" in
    "~") printf '%s' "$HOME" ;;
    "~/"*) printf '%s/%s' "$HOME" "${1#\~/}" ;;
    '$HF_HUB_CACHE') printf '%s' "${HF_HUB_CACHE:-}" ;;
    '$HF_HOME/hub') [ -n "${HF_HOME:-}" ] && printf '%s/hub' "$HF_HOME" ;;
    *) printf '%s' "$1" ;;
    esac
}

devino() {  # PATH -> "DEV<TAB>INO" of the path itself (a link is not followed)
    stat -c '%d	%i' -- "$1" 2>/dev/null || printf '0\t0'
}

du_sum() {  # FLAG PATH -> the total du prints first ("" when it printed nothing in time)
    local v=""
    timeout "$secs" du -x -s "$1" -0 -- "$2" 2>/dev/null | { IFS= read -r -d '	' v; printf '%s' "$v"; }
}

# TOP largest folders of one du pass (B: bytes, I: inodes) below ROOT, at most DEPTH deep.
du_top() {  # IDX B|I ROOT
    local idx=$1 what=$2 root=$3 flag=-B1 rc value path
    [ "$what" = I ] && flag=--inodes
    # du prints "VALUE<TAB>PATH<NUL>"; sort and head keep the TOP largest.
    while IFS= read -r -d '' rec; do
        value=${rec%%	*}
        path=${rec#*	}
        printf 'du\t%s\t%s\t%s\t%s\t%s\0' "$idx" "$what" "$value" "$(devino "$path")" "$path"
    done < <(timeout "$secs" du -x "$flag" --max-depth="$depth" -0 -- "$root" 2>/dev/null \
        | sort -z -t "	" -k1,1 -n -r | head -z -n "$top"; exit "${PIPESTATUS[0]}")
    wait $! 2>/dev/null
    rc=$?
    if [ "$rc" = 124 ]; then
        printf 'cut\t%s\t%s\tstopped after %s s: the figures are partial\0' "$idx" "$what" "$secs"
    elif [ "$rc" != 0 ]; then
        printf 'cut\t%s\t%s\tdu exited with %s (unreadable folders, or no --%s)\0' \
            "$idx" "$what" "$rc" "$([ "$what" = I ] && echo inodes || echo max-depth)"
    fi
}

audit() {
    secs=${1:-30} depth=${2:-2} top=${3:-20}
    case "$secs$depth$top" in *[!0-9]*) refuse usage "audit SECONDS DEPTH TOP" ;; esac
    printf 'home\t%s\0' "$HOME"
    printf 'boxid\t%s\0' "$(head -c 200 "$HOME/.rgt/box-id" 2>/dev/null | tr -d '\n')"
    local idx=0 rec kind given path real m
    while IFS= read -r -d '' rec; do
        kind=${rec%%	*}
        given=${rec#*	}
        path=$(expand "$given")
        if ! real=$(realpath -e -- "$path" 2>/dev/null) || [ ! -d "$real" ]; then
            printf 'missing\t%s\t%s\0' "$idx" "$kind"
            idx=$((idx + 1))
            continue
        fi
        printf 'root\t%s\t%s\t%s\0' "$idx" "$kind" "$real"
        case "$kind" in
        mount)
            du_top "$idx" B "$real"
            du_top "$idx" I "$real"
            ;;
        hf)
            # Each model folder alone, on its own file system, links not followed: the
            # snapshots' links into ../../blobs count as links, the blobs once.
            while IFS= read -r -d '' m; do
                printf 'hf\t%s\t%s\t%s\t%s\t%s\0' "$idx" "$(du_sum -B1 "$m")" \
                    "$(du_sum --inodes "$m")" "$(devino "$m")" "$m"
            done < <(timeout "$secs" find "$real" -mindepth 1 -maxdepth 1 -type d \
                \( -name 'models--*' -o -name 'datasets--*' \) -print0 2>/dev/null | head -z -n 500)
            ;;
        cell)
            timeout "$secs" find "$real" -xdev -type f \( -name '*.pt' -o -name '*.pth' \
                -o -name '*.ckpt' -o -name '*.safetensors' -o -name '*.tmp' \) \
                -printf "ckpt\t$idx\t%T@\t%s\t%D\t%i\t%p\0" 2>/dev/null | head -z -n 2000
            ;;
        esac
        idx=$((idx + 1))
    done
}

in_use() {  # PATH -> "PID (COMMAND)" of a process with PATH, or a file under it, open or mapped
    # One find over every process's open files and one awk over their memory maps (a
    # safetensors model is mmapped, its fd closed): a model deleted under a process that
    # loads it breaks its next read (s38 disk hour #4). A process of another user is
    # not seen; nothing here is a guarantee, only what this login can read.
    local hit pid pattern fds maps
    # -lname takes a glob: the path's own [ ] * ? \ are escaped to match as themselves.
    pattern=$(printf '%s' "$1" | sed 's/[][*?\\]/\\&/g')
    set +f # this script globs nothing else (set -f above): the processes' folders only
    fds=(/proc/[0-9]*/fd)
    maps=(/proc/[0-9]*/maps)
    set -f
    # Both exit non-zero on a process gone mid-walk or another user's: only output counts.
    hit=$(find "${fds[@]}" -mindepth 1 -maxdepth 1 \( -lname "$pattern" -o -lname "$pattern/*" \) \
        -print -quit 2>/dev/null || true)
    # A maps line's path is its 6th field on: compared whole, the path or one under it.
    # (ENVIRON, not -v: awk would read a backslash in the path as an escape.)
    [ -n "$hit" ] || hit=$(RGT_HELD="$1" awk '{
            i = index($0, " /"); if (!i) next
            s = substr($0, i + 1); p = ENVIRON["RGT_HELD"]
            if (s == p || index(s, p "/") == 1) { print FILENAME; exit }
        }' "${maps[@]}" 2>/dev/null || true)
    [ -n "$hit" ] || return 0
    pid=${hit#/proc/}
    pid=${pid%%/*}
    printf '%s (%s)' "$pid" "$(head -c 64 "/proc/$pid/comm" 2>/dev/null)"
}

delete() {
    local dev=${1:-} ino=${2:-} type=${3:-} path parent now aside holder
    case "$dev$ino" in '' | *[!0-9]*) refuse usage "delete DEV INO TYPE" ;; esac
    IFS= read -r -d '' path || refuse usage "the path comes on stdin, ended by a NUL"
    case "$path" in
    /*/*) ;;
    *) refuse path "not an absolute path below a folder: $path" ;;
    esac
    case "$path/" in */../* | */./* | *//*) refuse path "not a plain path: $path" ;; esac
    [ -L "$path" ] && refuse changed "$path is a link now (the audit saw none); nothing deleted"
    parent=${path%/*}
    # A folder on the way swapped for a link would move the delete elsewhere.
    now=$(cd -P -- "$parent" 2>/dev/null && pwd -P) || refuse changed "$parent is gone"
    [ "$now" = "$parent" ] && [ -n "$parent" ] ||
        refuse changed "$parent now leads to $now (a link on the way); nothing deleted"
    case "$type" in
    d) [ -d "$path" ] || refuse changed "$path is no longer a folder" ;;
    f) [ -f "$path" ] || refuse changed "$path is no longer a regular file" ;;
    *) refuse usage "TYPE is d or f" ;;
    esac
    [ "$(devino "$path")" = "$dev	$ino" ] ||
        refuse changed "$path is another file than the audit saw (device/inode differ)"
    holder=$(in_use "$path")
    [ -z "$holder" ] ||
        refuse busy "process $holder has a file under $path open: a model it loads, or a file it writes, would be gone under it; stop that process first, then delete; nothing deleted"
    # Rename first, then check what was renamed: whatever was swapped in after the
    # checks above is what moved, so the inode check below sees it and puts it back.
    aside="$parent/.rgt-deleting.$$"
    mv -T -- "$path" "$aside" 2>/dev/null || refuse failed "cannot move $path aside to delete it"
    if [ -L "$aside" ] || [ "$(devino "$aside")" != "$dev	$ino" ]; then
        mv -T -- "$aside" "$path" 2>/dev/null
        refuse changed "$path changed while it was being deleted; put back, nothing deleted"
    fi
    if [ "$type" = d ] && [ "${4:-}" = listed ]; then
        delete_listed "$path" "$aside"
        return
    fi
    # rm never follows a link inside a folder; --one-file-system keeps it off mounts.
    if [ "$type" = d ]; then
        rm -rf --one-file-system -- "$aside" || refuse failed "rm could not remove all of $path"
    else
        rm -f -- "$aside" || refuse failed "rm could not remove $path"
    fi
    printf 'deleted\t%s\n' "$path"
}

delete_listed() {  # PATH ASIDE; stdin: the files that may go (see the top)
    local path=$1 aside=$2 size mtime rel kept=0
    local -A checked=()
    while IFS=$'\t' read -r -d '' size mtime rel; do
        checked["$rel"]="$size $mtime"
    done
    # find never follows a link, so each path it prints is the file under the folder; a
    # file written or changed since the check is not listed as it is now, and stays.
    while IFS=$'\t' read -r -d '' size mtime rel; do
        [ "${checked["$rel"]:-}" = "$size ${mtime%.*}" ] && rm -f -- "$aside/$rel"
    done < <(find "$aside" -xdev -type f -printf '%s\t%T@\t%P\0' 2>/dev/null)
    # Links the scan saw go with their folder; folders left empty go too.
    find "$aside" -xdev -type l -delete 2>/dev/null
    find "$aside" -xdev -depth -type d -empty -delete 2>/dev/null
    if [ -e "$aside" ]; then
        # Something no check covered: the folder goes back where it was, holding it.
        mv -T -- "$aside" "$path" 2>/dev/null ||
            refuse failed "files written since the check are kept in $aside (could not move it back to $path)"
        while IFS= read -r -d '' rel; do
            kept=$((kept + 1))
            [ "$kept" -le 20 ] && printf 'kept\t%s\0' "$rel"
        done < <(find "$path" -xdev ! -type d -printf '%P\0' 2>/dev/null)
        printf 'keptcount\t%s\0' "$kept"
    fi
    printf 'deleted\t%s\n' "$path"
}

case "$verb" in
audit) audit "$@" ;;
delete) delete "$@" ;;
*) refuse usage "unknown verb: $verb (audit, delete)" ;;
esac
