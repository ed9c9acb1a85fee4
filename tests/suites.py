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

"""The gate of each suite against a real peer (Ironic, Keystone, Nova,
Galera, RabbitMQ, Prometheus, other OSC plugins): its package loads its
tests only under its own tox env, which sets ``RESERVEAPI_TEST_SUITE``;
anywhere else (the README's ``tox -e py3``) it contributes no test at
all, not even a skipped one."""

import os

SUITE_VARIABLE = 'RESERVEAPI_TEST_SUITE'


def gate(name, package_file):
    """``load_tests`` for the package whose ``__init__.py`` is
    ``package_file``: its tests only when the suite is ``name``."""
    here = os.path.dirname(package_file)
    top = os.path.dirname(os.path.dirname(here))

    def load_tests(loader, tests, pattern):
        if os.environ.get(SUITE_VARIABLE) != name:
            return loader.suiteClass()
        tests.addTests(loader.discover(start_dir=here,
                                       pattern=pattern or 'test*.py',
                                       top_level_dir=top))
        return tests

    return load_tests
