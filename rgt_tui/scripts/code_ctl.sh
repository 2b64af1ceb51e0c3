# rgt-tui's box-side code-sync verbs that look past the local listing (issue 39, U42):
# services/code_sync/box_tree.py sends queue_ctl.sh's functions (its verb dispatch cut
# off) followed by this file as one `bash -c` script, so the lock, the running rule and
# the path checks are queue_ctl.sh's own (take_lock, running_reason, code_dir,
# code_rel_ok, code_no_link, refuse, make_dir, io_reason), not a second copy of them.
#
#   code-scan DIR       NUL-terminated: "dir<TAB>1|0", then every directory under DIR as
#                       "./REL" (.git anywhere, the top's .rgt-sync.* and .rgt -- rgt-tui's
#                       own records when the workdir is the home -- pruned, links never
#                       followed), then each line of DIR/.rgt-sync.record as "r<TAB>LINE"
#   code-files DIR      the relative dirs on stdin (NUL-separated, "." the top): every
#                       regular file directly in them, NUL-terminated "./REL"
#   code-entries DIR    the relative dirs on stdin (NUL-separated): every entry under
#                       each, of any kind and name (.git included, links never followed),
#                       NUL-terminated "./REL", a folder's with a "/" after it
#   code-prune DIR SESSION   stdin "rm<TAB>SHA256<TAB>REL" and "rec<TAB>LINE" items,
#                       NUL-terminated: under the queue lock and only while no queue
#                       runs, removes each REL whose content still hashes to SHA256 (any
#                       other is kept and named), then writes the record's LINEs to
#                       DIR/.rgt-sync.record atomically

# record_name: queue_ctl.sh's (the sync record; a launch checks its stamp there too)

code_scan() {
    local dir rec line at free
    dir=$(code_dir "$1")
    # Free bytes where the sync stages its files (the workdir, or the folder it will be
    # made in): a full disk read as rsync's "Broken pipe" (sync_code compares).
    at=$dir
    while [ ! -d "$at" ] && [ "$at" != / ] && [ -n "$at" ]; do at=$(dirname -- "$at"); done
    free=$(df -Pk -- "$at" 2>/dev/null | awk 'NR == 2 { print $4 }')
    case "$free" in '' | *[!0-9]*) ;; *) printf 'free\t%s\0' "$((free * 1024))" ;; esac
    if [ ! -d "$dir" ]; then
        printf 'dir\t0\0'
        return 0
    fi
    printf 'dir\t1\0'
    (cd -- "$dir" && find . -mindepth 1 \( -name .git -o -path './.rgt-sync.*' -o -path ./.rgt \) -prune -o -type d -print0 2>/dev/null)
    rec=$dir/$record_name
    # Which record this is (each sync writes a new file: a new inode): a launch checks,
    # under the queue lock, that no sync came between its code check and its start.
    printf 's\t%s\0' "$(record_stamp "$rec")"
    if [ -f "$rec" ] && [ ! -L "$rec" ]; then
        while IFS= read -r line || [ -n "$line" ]; do printf 'r\t%s\0' "$line"; done <"$rec"
    fi
    return 0
}

# The relative dirs on stdin (NUL-separated, "." the top) that are safe to list under
# DIR, as "./REL" in the global array code_ok (one reading for code-files and
# code-entries).
code_dirs_read() {  # DIR
    local rel
    code_ok=()
    while IFS= read -r -d '' rel; do
        if [ "$rel" = . ]; then
            code_ok+=(".")
        elif code_rel_ok "$rel" && code_no_link "$1" "$rel"; then
            code_ok+=("./$rel")
        fi
    done
}

code_files() {
    local dir
    dir=$(code_dir "$1")
    [ -d "$dir" ] || return 0
    code_dirs_read "$dir"
    [ "${#code_ok[@]}" -gt 0 ] || return 0
    # find -P (the default) never follows a link, a starting point's included.
    (cd -- "$dir" && printf '%s\0' "${code_ok[@]}" |
        xargs -0 sh -c 'find "$@" -mindepth 1 -maxdepth 1 -type f -print0 2>/dev/null' sh)
    return 0
}

code_entries() {
    local dir
    dir=$(code_dir "$1")
    [ -d "$dir" ] || return 0
    code_dirs_read "$dir"
    [ "${#code_ok[@]}" -gt 0 ] || return 0
    # -exec with + is true: a folder is printed once, with its "/"; anything else by -print0.
    (cd -- "$dir" && find "${code_ok[@]}" -mindepth 1 \( -type d -exec printf '%s/\0' {} + \) -o -print0 2>/dev/null)
    return 0
}

code_prune() {
    local dir session=${2:-} item kind rest h rel got p why tmp err n=0
    local -a rms=() recs=()
    dir=$(code_dir "$1")
    while IFS= read -r -d '' item; do
        kind=${item%%"$tab"*} rest=${item#*"$tab"}
        case "$kind" in
            rm)
                h=${rest%%"$tab"*} rel=${rest#*"$tab"}
                code_rel_ok "$rel" || refuse usage "unsafe path in the removal list"
                case "$h" in '' | *[!0-9a-f]*) refuse usage "bad hash for $rel" ;; esac
                rms+=("$h$tab$rel")
                ;;
            rec) recs+=("$rest") ;;
            *) refuse usage "unknown prune item '$kind'" ;;
        esac
    done
    [ -d "$dir" ] || refuse gone "$dir does not exist on the box"
    command -v sha256sum >/dev/null 2>&1 || refuse no-sha256sum "sha256sum is not installed on the box (install coreutils)"
    make_dir "$rgt"
    take_lock
    if why=$(running_reason "$session"); then refuse running "$why"; fi
    for item in "${rms[@]}"; do
        h=${item%%"$tab"*} rel=${item#*"$tab"}
        if ! code_no_link "$dir" "$rel"; then
            printf 'kept\tlink\t%s\n' "$rel"
            continue
        fi
        if [ ! -f "$dir/$rel" ]; then
            printf 'kept\tgone\t%s\n' "$rel"
            continue
        fi
        got=$(sha256sum <"$dir/$rel" 2>/dev/null) || got=
        if [ "${got:0:64}" != "$h" ]; then
            printf 'kept\tchanged\t%s\n' "$rel"
            continue
        fi
        rm -f -- "$dir/$rel" || refuse io "cannot remove $dir/$rel ($n removed; the record is unchanged)"
        n=$((n + 1))
        printf 'removed\t%s\n' "$rel"
        # Parents left empty go too: rmdir never removes a directory that holds anything.
        p=$rel
        while [ "${p%/*}" != "$p" ]; do
            p=${p%/*}
            rmdir -- "$dir/$p" 2>/dev/null || break
        done
    done
    [ -d "$dir/$record_name" ] && [ ! -L "$dir/$record_name" ] &&
        refuse blocked "$dir/$record_name is a directory: move it aside, then sync again"
    tmp=$dir/$record_name.tmp.$$
    prune_tmp=$tmp  # global: the EXIT trap runs after this function's locals are gone
    trap 'rm -f "$prune_tmp"' EXIT
    # 2>&1 before >"$tmp": the shell's own "cannot open" message is kept for io_reason.
    err=$({
        [ "${#recs[@]}" -eq 0 ] || printf '%s\n' "${recs[@]}"
    } 2>&1 >"$tmp" && LC_ALL=C mv -f -- "$tmp" "$dir/$record_name" 2>&1) ||
        refuse io "cannot write $dir/$record_name ($n removed): $(io_reason "$err")"
    printf 'recorded\t%s\n' "${#recs[@]}"
}

case "$verb" in
    code-scan) code_scan "$@" ;;
    code-files) code_files "$@" ;;
    code-entries) code_entries "$@" ;;
    code-prune) code_prune "$@" ;;
    *) refuse usage "unknown verb '$verb' (code-scan, code-files, code-entries, code-prune)" ;;
esac
