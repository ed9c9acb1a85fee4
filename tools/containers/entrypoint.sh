#!/bin/sh
# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at
#
#      http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
# WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
# License for the specific language governing permissions and limitations
# under the License.

# The image's entry point: its command names the role
# (doc/source/install/containers.rst).
#
#   api                      gunicorn on $RESERVEAPI_BIND (0.0.0.0:6390),
#                            $RESERVEAPI_API_WORKERS workers (2)
#   worker [ARGS]            reserveapi-worker
#   dbsync expand|migrate|contract|upgrade|current [ARGS]
#   manage ARGS              reserveapi-manage
#   status ARGS              reserveapi-status (upgrade check)
#   healthcheck              exit 0 when the API answers /healthcheck
#   anything else            run as given (a shell, python -m ...)
#
# Every command reads /etc/reserveapi/reserveapi.conf (mounted), or the
# file $RESERVEAPI_CONFIG_FILE names, then the *.conf files of the
# directory $RESERVEAPI_CONFIG_DIR (the one beside it,
# reserveapi.conf.d/, unless set), in name order, a later value winning
# (oslo.config's --config-dir): on Kubernetes the ConfigMap holds the
# file and the Secret (the database URL, passwords) the directory.
# The API reads one file, so with such a directory every role reads
# their concatenation, written for this process only under $TMPDIR.
# Every process logs to stderr, gunicorn's access log to stdout.
set -eu

CONFIG=${RESERVEAPI_CONFIG_FILE:-/etc/reserveapi/reserveapi.conf}
CONFIG_DIR=${RESERVEAPI_CONFIG_DIR:-${CONFIG%.conf}.conf.d}
if [ -d "$CONFIG_DIR" ] && [ -n "$(ls "$CONFIG_DIR"/*.conf 2>/dev/null)" ]; then
    merged=$(umask 077 && mktemp "${TMPDIR:-/tmp}/reserveapi.conf.XXXXXX")
    for part in "$CONFIG" "$CONFIG_DIR"/*.conf; do
        cat "$part"
        echo
    done > "$merged"
    CONFIG=$merged
fi
export RESERVEAPI_CONFIG_FILE="$CONFIG"
BIN=/opt/reserveapi/bin

role=${1:-api}
if [ $# -gt 0 ]; then shift; fi

case "$role" in
api)
    # Versions before metrics (1.0.0) have no gunicorn settings module.
    settings=
    if [ -n "$(ls /opt/reserveapi/lib/python3*/site-packages/reserveapi/wsgi/gunicorn_config.py 2>/dev/null)" ]
    then
        settings="-c python:reserveapi.wsgi.gunicorn_config"
    fi
    # shellcheck disable=SC2086
    exec "$BIN/gunicorn" $settings \
        --bind "${RESERVEAPI_BIND:-0.0.0.0:6390}" \
        --workers "${RESERVEAPI_API_WORKERS:-2}" \
        --access-logfile - --error-logfile - \
        --graceful-timeout "${RESERVEAPI_GRACEFUL_TIMEOUT:-20}" \
        "$@" reserveapi.wsgi.api:application
    ;;
worker)
    exec "$BIN/reserveapi-worker" --config-file "$CONFIG" "$@"
    ;;
dbsync)
    exec "$BIN/reserveapi-dbsync" --config-file "$CONFIG" "$@"
    ;;
manage)
    exec "$BIN/reserveapi-manage" --config-file "$CONFIG" "$@"
    ;;
status)
    exec "$BIN/reserveapi-status" --config-file "$CONFIG" "$@"
    ;;
healthcheck)
    bind=${RESERVEAPI_BIND:-0.0.0.0:6390}
    port=${bind##*:}
    exec "$BIN/python" -c '
import sys, urllib.request
try:
    with urllib.request.urlopen(sys.argv[1], timeout=5) as answer:
        sys.exit(0 if answer.status == 200 else 1)
except Exception as exc:
    print(exc, file=sys.stderr)
    sys.exit(1)
' "http://127.0.0.1:$port/healthcheck"
    ;;
*)
    exec "$role" "$@"
    ;;
esac
