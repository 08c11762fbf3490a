# bench/lib.sh: what the shell benchmarks share (sourced): ports,
# a throw-away redis-server, a waiting start and stop for nginx. The Perl
# ones use t/lib (RlTest::Redis, RlTest::Proc) for the same.

# bench_port: a free loopback port (the kernel's pick).
bench_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# bench_redis PORT DIR [WRAPPER...]: a redis-server without persistence on
# 127.0.0.1:PORT, its log in DIR, in the background (under WRAPPER, e.g.
# valgrind, if given); returns once it answers PING (at most 60 s).
bench_redis() {
    local port=$1 dir=$2 i
    shift 2
    "$@" redis-server --port "$port" --bind 127.0.0.1 --save '' \
        --appendonly no --dir "$dir" --logfile "$dir/redis.log" \
        >/dev/null 2>&1 &
    for i in $(seq 600); do
        redis-cli -p "$port" ping >/dev/null 2>&1 && return 0
        sleep 0.1
    done
    echo "bench: no redis-server answers on $port ($dir/redis.log)" >&2
    return 1
}

# bench_redis_stop PORT: shuts that redis-server down (nothing if gone).
bench_redis_stop() {
    redis-cli -p "$1" shutdown nosave >/dev/null 2>&1 || true
}

# bench_wait URL: returns once URL answers 2xx (at most 60 s).
bench_wait() {
    local i
    for i in $(seq 600); do
        curl -sf -o /dev/null "$1" && return 0
        sleep 0.1
    done
    echo "bench: nothing answers $1" >&2
    return 1
}

# bench_conf MODULE REDIS_PORT PORT: an nginx.conf with one worker, a
# location without rules (/plain) and one Redis-limited location whose
# limit nothing reaches (/limited, one key: the client's address).
bench_conf() {
    cat <<CONF
load_module $1;
worker_processes 1;
error_log logs/error.log error;
pid nginx.pid;
events { worker_connections 4096; }
http {
    access_log off;
    rl_zone main redis=127.0.0.1:$2;
    server {
        listen 127.0.0.1:$3;
        location /plain { empty_gif; }
        location /limited {
            rl_rule zone=main key=\$binary_remote_addr rate=100000000r/s;
            empty_gif;
        }
    }
}
CONF
}

# bench_stop PIDFILE: stops that nginx and waits until it is gone, so the
# next run can have its port (at most 5 s).
bench_stop() {
    local pid i
    [ -f "$1" ] || return 0
    pid=$(cat "$1")
    kill -QUIT "$pid" 2>/dev/null
    for i in $(seq 50); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
}
