# rgt-tui group preflight, box side (issue 41; services/queue/group/preflight.py sends it
# whole as `bash -c <this> group_check MODE ARGS...`). Every line it prints is
# "key<TAB>value"; domain/preflight_net.py parses them as hostile text.
#   facts ADDR PING   the route to ADDR, the interfaces' MTUs and IPv4 addresses, a
#                     full-size don't-fragment ping to ADDR when PING is 1, and the
#                     fabric manager's state (nvidia-smi -q, systemctl)
#   rdzv ...          run the one-shot listener / connector (group_rdzv.py, on stdin)
#                     with the box's python3
mode=$1
shift
case "$mode" in
facts)
    addr=$1
    want_ping=$2
    if command -v ip >/dev/null 2>&1; then
        ip route get "$addr" 2>&1 | head -n 3 | sed 's/^/route\t/'
        ip -o link show 2>/dev/null | head -n 256 | sed 's/^/link\t/'
        ip -o -4 addr show 2>/dev/null | head -n 64 | sed 's/^/addr\t/'
        dev=$(ip route get "$addr" 2>/dev/null | sed -n 's/.* dev \([^ ]*\).*/\1/p' | head -n 1)
        mtu=$(cat "/sys/class/net/$dev/mtu" 2>/dev/null)
        # 28 bytes of IP and ICMP headers; a loopback's 64 KiB MTU is no path to probe.
        if [ "$want_ping" = 1 ] && [ -n "$mtu" ] && [ "$mtu" -le 9216 ] 2>/dev/null \
            && command -v ping >/dev/null 2>&1; then
            size=$((mtu - 28))
            # MN4's signature: a small frame gets through, a full-size one does not (when
            # neither does, ICMP is blocked and nothing is learnt).
            small=$(timeout 5 ping -c 1 -W 2 "$addr" >/dev/null 2>&1; echo $?)
            said=$(timeout 5 ping -M do -s "$size" -c 1 -W 2 "$addr" 2>&1)
            big=$?
            last=$(printf '%s\n' "$said" | grep -v '^$' | tail -n 1)
            printf 'ping\t%s\t%s\t%s\t%s\n' "$size" "$big" "$small" "$last"
        fi
    fi
    if command -v nvidia-smi >/dev/null 2>&1; then
        printf 'smi\t1\n'
        timeout 30 nvidia-smi -q 2>&1 | head -c 1000000 | sed 's/^/q\t/'
    fi
    if command -v systemctl >/dev/null 2>&1; then
        timeout 10 systemctl status nvidia-fabricmanager --no-pager -n 0 2>&1 | head -n 20 \
            | sed 's/^/fm\t/'
    fi
    printf 'end\t1\n'
    ;;
rdzv)
    py=$(command -v python3 || command -v python)
    if [ -z "$py" ]; then
        printf 'refused\tno-python\tno python3 on the box to run the rendezvous check\n'
        exit 0
    fi
    "$py" - "$@"
    ;;
*)
    printf 'refused\tusage\tunknown mode %s\n' "$mode"
    ;;
esac
