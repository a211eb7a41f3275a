"""metadata.py: secrets never reach the environment table."""

import pytest

from nodegate.reports.metadata import REDACTED, is_secret_key, redact


@pytest.mark.parametrize("key", ["CI_JOB_TOKEN", "GITHUB_TOKEN", "AWS_SECRET_ACCESS_KEY",
                                 "DB_PASSWORD", "SSH_PRIVATE_KEY", "api-key", "NPM_AUTH",
                                 "VAULT_CREDENTIALS", "my.session"])
def test_secret_keys(key):
    assert is_secret_key(key) is True


@pytest.mark.parametrize("key", ["CI_COMMIT_SHA", "CI_JOB_ID", "Python", "KEYCLOAK_URL",
                                 "GITLAB_USER_EMAIL", "CI_COMMIT_AUTHOR"])
def test_plain_keys(key):
    assert is_secret_key(key) is False


def test_redact_nested_and_url_credentials():
    md = {"CI_JOB_TOKEN": "abc", "Plugins": {"html": "4.2.0", "SECRET_X": "s"},
          "CI_REPOSITORY_URL": "https://gitlab-ci-token:glcbt-123@gitlab.example.com/g/p.git",
          "Python": "3.11"}
    assert redact(md) == {"CI_JOB_TOKEN": REDACTED, "Plugins": {"html": "4.2.0", "SECRET_X": REDACTED},
                          "CI_REPOSITORY_URL": "https://***@gitlab.example.com/g/p.git",
                          "Python": "3.11"}
