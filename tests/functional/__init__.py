from oslo_db.sqlalchemy import test_fixtures

load_tests = test_fixtures.optimize_package_test_loader(__file__)
