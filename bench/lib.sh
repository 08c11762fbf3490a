# bench/lib.sh: what bench/quick and bench/floor share (sourced).

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
