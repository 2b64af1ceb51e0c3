#!/usr/bin/env bash
# rgt-tui's box-side half of a resume move (services/queue/resume.py): the target box
# gets a cell's pulled-and-verified files in a staging folder beside its durable dir,
# they are hashed there (queue_ctl.sh code-hash), and only then renamed to the cell's
# {out} in one step, so a push cut short never leaves a half output folder where the run
# would load it. Sent as one `bash -c` script after queue_ctl.sh's functions (its verb
# dispatch cut off; box_script.after_queue_ctl), so refuse, make_dir and io_reason are
# queue_ctl.sh's own, not a second copy of them: `bash -c <both> resume_ctl VERB ARGS...`.
#
#   target DURABLE NAME [WORKDIR CFG]
#                             "home<TAB>$HOME", "durable<TAB>PATH", "out<TAB>absent|empty|
#                             files<TAB>N|link|other", "df<TAB><df -Pk row of the nearest
#                             existing folder>"; with WORKDIR and CFG (the cell's config
#                             path, relative to the workdir cells start in) also
#                             "cfg<TAB>present|absent<TAB>PATH"; nothing is created
#   newer DURABLE NAME SINCE  "newer<TAB>MTIME<TAB>PATH", NUL-ended, for the newest files (at
#                             most 501: more than 500 means the list is cut) under
#                             DURABLE/NAME written after SINCE (epoch seconds, the box's
#                             clock), PATH relative to it: what the run wrote after the
#                             checkpoint a resume would start from; "out<TAB>absent" when
#                             there is no such folder
#   stage DURABLE TOKEN       removes the staging folders earlier pushes cut off left in
#                             DURABLE a day ago or more, creates DURABLE and
#                             DURABLE/.rgt-resume.TOKEN (0700)
#                             and, under it, the relative dirs on stdin (NUL-separated);
#                             "staged<TAB>PATH"
#   commit DURABLE NAME TOKEN renames the staging folder to DURABLE/NAME (an empty folder
#                             there is removed first; anything else refuses); "committed<TAB>PATH"
#   drop DURABLE TOKEN        removes the staging folder (after a failed push)
#   takeback DURABLE NAME TOKEN
#                             renames DURABLE/NAME (committed by this move, before the cell
#                             ran there) back to the staging folder and removes it: a move
#                             refused after its push leaves nothing on the target. The
#                             pushed files' relative paths come on stdin (NUL-separated):
#                             a folder holding any other file (a run started in it) is
#                             refused, never removed
#
# A refusal prints "refused<TAB>CODE<TAB>DETAIL" and exits 3.

expand() {  # PATH -> PATH with a leading ~ expanded (arguments arrive quoted whole)
    case "$1" in
        "~") printf '%s' "$HOME" ;;
        "~/"*) printf '%s/%s' "$HOME" "${1#"~/"}" ;;
        *) printf '%s' "$1" ;;
    esac
}

name_ok() {  # one path component: no slash, not . or .., no control character
    case "$1" in '' | . | .. | */* | *[[:cntrl:]]*) return 1 ;; esac
}

rel_ok() {  # a relative path that stays below its folder
    case "/$1/" in */../* | */./* | *//* | *[[:cntrl:]]*) return 1 ;; esac
    [ -n "$1" ]
}

token_ok() {
    case "$1" in '' | *[!0-9a-f]*) refuse usage "bad staging token '$1'" ;; esac
}

target() {
    local durable name out n p
    durable=$(expand "$1")
    name=$2
    name_ok "$name" || refuse usage "bad cell name"
    out="$durable/$name"
    printf 'home\t%s\n' "$HOME"
    printf 'durable\t%s\n' "$durable"
    if [ -L "$out" ]; then
        printf 'out\tlink\n'
    elif [ -d "$out" ]; then
        n=$(find "$out" -mindepth 1 -maxdepth 4 2>/dev/null | head -n 1000 | wc -l)
        if [ "$n" -eq 0 ]; then printf 'out\tempty\n'; else printf 'out\tfiles\t%s\n' "$n"; fi
    elif [ -e "$out" ]; then
        printf 'out\tother\n'
    else
        printf 'out\tabsent\n'
    fi
    p=$durable
    while [ ! -e "$p" ] && [ "$p" != / ] && [ -n "$p" ]; do p=$(dirname -- "$p"); done
    printf 'df\t%s\n' "$(df -Pk -- "$p" 2>/dev/null | tail -n 1)"
    if [ $# -ge 4 ]; then
        local cfg
        cfg=$(expand "$4")
        case "$cfg" in /*) ;; *) cfg="$(expand "$3")/$cfg" ;; esac
        if [ -e "$cfg" ]; then printf 'cfg\tpresent\t%s\n' "$cfg"; else printf 'cfg\tabsent\t%s\n' "$cfg"; fi
    fi
}

stage() {
    local durable token stage_dir rel err
    durable=$(expand "$1")
    token=$2
    token_ok "$token"
    make_dir "$durable" durable_dir
    [ -L "$durable" ] && [ ! -d "$durable/." ] && refuse link "$durable is a link to no folder"
    # A push whose connection dropped could not remove its own. Only a day-old one: two
    # moves onto one spare at once (spot boxes preempted together) each stage here, and
    # removing the other's in-progress folder failed it (review h574 #3). Pulls skip them.
    find "$durable/." -mindepth 1 -maxdepth 1 -type d -name '.rgt-resume.*' -mmin +1440 \
        -exec rm -rf -- {} + 2>/dev/null
    stage_dir="$durable/.rgt-resume.$token"
    err=$(LC_ALL=C mkdir -m 700 -- "$stage_dir" 2>&1) || refuse io "cannot create $stage_dir: $(io_reason "$err")"
    while IFS= read -r -d '' rel; do
        rel_ok "$rel" || refuse usage "unsafe folder name in the staging list"
        make_dir "$stage_dir/$rel"
    done
    printf 'staged\t%s\n' "$stage_dir"
}

# DURABLE NAME TOKEN -> stage_dir and out, the caller's locals (bash scoping), checked.
cell_paths() {
    local durable
    durable=$(expand "$1")
    name_ok "$2" || refuse usage "bad cell name"
    token_ok "$3"
    stage_dir="$durable/.rgt-resume.$3"
    out="$durable/$2"
}

commit() {
    local stage_dir out
    cell_paths "$@"
    [ -d "$stage_dir" ] && [ ! -L "$stage_dir" ] || refuse missing "no staging folder $stage_dir"
    if [ -L "$out" ]; then
        refuse exists "$out is a link: the cell's output folder must be its own"
    elif [ -d "$out" ]; then
        # Empty at the plan, so written since: by another move of this cell, whose run
        # there resumes from them (h592 #5: "move them aside" would take its checkpoint).
        rmdir -- "$out" 2>/dev/null || refuse exists "$out holds files written since the move \
was planned (another move of this cell, or the cell itself running there?): look at them \
(rgt-tui queue show) before moving anything there aside"
    elif [ -e "$out" ]; then
        refuse exists "$out exists and is not a folder"
    fi
    chmod 755 -- "$stage_dir" 2>/dev/null
    mv -T -- "$stage_dir" "$out" 2>/dev/null || mv -- "$stage_dir" "$out" ||
        refuse io "cannot rename $stage_dir to $out"
    printf 'committed\t%s\n' "$out"
}

drop() {
    local durable token
    durable=$(expand "$1")
    token=$2
    token_ok "$token"
    [ -d "$durable/.rgt-resume.$token" ] && rm -rf -- "$durable/.rgt-resume.$token"
    printf 'dropped\n'
}

takeback() {
    local stage_dir out pushed found rel
    cell_paths "$@"
    [ -d "$out" ] && [ ! -L "$out" ] || refuse missing "no folder $out to take back"
    [ -e "$stage_dir" ] && refuse exists "$stage_dir is there already"
    pushed=$(mktemp) || refuse io "cannot create a temp file (disk full?)"
    while IFS= read -r -d '' rel; do
        rel_ok "$rel" || { rm -f "$pushed"; refuse usage "unsafe name in the pushed list"; }
        printf '%s\n' "$rel" >>"$pushed"
    done
    # Every file under it must be one this move pushed (a name with a newline is no
    # pushed name: it counts as another file).
    found=$(cd "$out" && find . -mindepth 1 ! -type d -print 2>/dev/null | sed 's|^\./||' |
        grep -vxF -f "$pushed" | head -n 1)
    rm -f "$pushed"
    [ -z "$found" ] || refuse exists "$out holds a file this move did not push ($found): left as it is"
    mv -T -- "$out" "$stage_dir" 2>/dev/null || mv -- "$out" "$stage_dir" ||
        refuse io "cannot rename $out back to $stage_dir"
    rm -rf -- "$stage_dir"
    printf 'taken\t%s\n' "$out"
}

newer() {
    local out since
    name_ok "$2" || refuse usage "bad cell name"
    out="$(expand "$1")/$2"
    since=$3
    case "$since" in '' | *[!0-9.]*) refuse usage "bad time '$since'" ;; esac
    # -H: an {out} that is a link (to a larger disk) is listed where it points.
    [ -e "$out" ] || { printf 'out\tabsent\0'; return 0; }
    find -H "$out" -mindepth 1 -type f -newermt "@$since" -printf 'newer\t%T@\t%P\0' |
        sort -z -t "$(printf '\t')" -k2,2 -rn | head -z -n 501
    # find's own status: one that could not read a folder listed only part of it, and an
    # empty list must not then read as "nothing written since" (review s44 #4).
    [ "${PIPESTATUS[0]}" -eq 0 ] || refuse io "could not list all of $out"
}

case "$verb" in
    target) target "$@" ;;
    newer) newer "$@" ;;
    stage) stage "$@" ;;
    commit) commit "$@" ;;
    drop) drop "$@" ;;
    takeback) takeback "$@" ;;
    *) refuse usage "unknown verb '$verb'" ;;
esac
