#!/bin/bash
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

# Make sure the local PostgreSQL and MariaDB are up, and create the
# openstack_citest user and database that oslo.db's opportunistic tests
# look for. Needs psql as the postgres superuser (trust auth) and the
# mariadb client as root with no password, as on the CI machines.
set -eu

if command -v pg_ctlcluster >/dev/null 2>&1 \
        && ! pg_isready -q -h 127.0.0.1 2>/dev/null; then
    for version in $(ls /etc/postgresql); do
        pg_ctlcluster --skip-systemctl-redirect "$version" main start || true
    done
fi
if command -v mariadbd >/dev/null 2>&1 \
        && ! mysqladmin -u root -h 127.0.0.1 ping >/dev/null 2>&1; then
    start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd
    for _ in $(seq 30); do
        mysqladmin -u root -h 127.0.0.1 ping >/dev/null 2>&1 && break
        sleep 1
    done
fi

DB_USER=openstack_citest
DB_PW=openstack_citest

if command -v mysql >/dev/null 2>&1; then
    mysql -u root -h 127.0.0.1 <<SQL
CREATE USER IF NOT EXISTS '$DB_USER'@'%' IDENTIFIED BY '$DB_PW';
CREATE USER IF NOT EXISTS '$DB_USER'@'localhost' IDENTIFIED BY '$DB_PW';
GRANT ALL PRIVILEGES ON *.* TO '$DB_USER'@'%' WITH GRANT OPTION;
GRANT ALL PRIVILEGES ON *.* TO '$DB_USER'@'localhost' WITH GRANT OPTION;
CREATE DATABASE IF NOT EXISTS $DB_USER CHARACTER SET utf8mb4;
FLUSH PRIVILEGES;
SQL
    echo "MariaDB/MySQL: $DB_USER ready"
fi

if command -v psql >/dev/null 2>&1; then
    PSQL="psql -h 127.0.0.1 -U postgres -v ON_ERROR_STOP=1 -q"
    if ! $PSQL -tAc "SELECT 1 FROM pg_roles WHERE rolname='$DB_USER'" \
            | grep -q 1; then
        $PSQL -c "CREATE ROLE $DB_USER WITH SUPERUSER LOGIN PASSWORD '$DB_PW'"
    fi
    if ! $PSQL -tAc "SELECT 1 FROM pg_database WHERE datname='$DB_USER'" \
            | grep -q 1; then
        $PSQL -c "CREATE DATABASE $DB_USER OWNER $DB_USER"
    fi
    echo "PostgreSQL: $DB_USER ready"
fi
