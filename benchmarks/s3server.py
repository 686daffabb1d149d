"""A real S3-compatible server for the tests and ``logs.py --s3``: moto's server mode on
127.0.0.1 on a free port, started and stopped (by its own pid) here, with request signing
enforced: an ``admin`` key that may do anything, a ``nobody`` key that exists but is allowed
nothing, and a ``lister`` key that may list buckets but read no object."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

REGION = "us-east-1"
# moto lets this many requests through unsigned (to create the admin user and its key), then
# checks every request's signature and the IAM policy of its key.
UNSIGNED_SETUP_REQUESTS = 3


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def port_open(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


@dataclass
class S3Server:
    endpoint: str
    admin: dict[str, str]
    nobody: dict[str, str]
    lister: dict[str, str]
    process: subprocess.Popen

    def env(self, key: str = "admin", endpoint: str | None = None) -> dict[str, str]:
        """The standard AWS variables for one of the keys (as a user sets them)."""
        credentials = {"admin": self.admin, "nobody": self.nobody, "lister": self.lister}[key]
        return {"AWS_ACCESS_KEY_ID": credentials["AccessKeyId"], "AWS_SECRET_ACCESS_KEY": credentials["SecretAccessKey"],
                "AWS_REGION": REGION, "AWS_DEFAULT_REGION": REGION, "AWS_ENDPOINT_URL": endpoint or self.endpoint}

    def client(self):  # boto3, as the admin
        import boto3

        env = self.env()
        return boto3.client("s3", aws_access_key_id=env["AWS_ACCESS_KEY_ID"],
                            aws_secret_access_key=env["AWS_SECRET_ACCESS_KEY"], region_name=REGION,
                            endpoint_url=self.endpoint)

    def upload(self, bucket: str, files: dict[str, bytes | Path]) -> None:
        """Objects from bytes, or from local files (uploaded in parts, as a big file is)."""
        client = self.client()
        existing = {b["Name"] for b in client.list_buckets().get("Buckets", [])}
        if bucket not in existing:
            client.create_bucket(Bucket=bucket)
        for key, body in files.items():
            if isinstance(body, Path):
                client.upload_file(str(body), bucket, key)
            else:
                client.put_object(Bucket=bucket, Key=key, Body=body)

    def keys(self, bucket: str, prefix: str = "") -> list[str]:
        pages = self.client().get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
        return sorted(item["Key"] for page in pages for item in page.get("Contents", []))

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)


def start_s3_server(log: Path) -> S3Server:
    import boto3

    port = free_port()
    env = dict(os.environ, INITIAL_NO_AUTH_ACTION_COUNT=str(UNSIGNED_SETUP_REQUESTS))
    with log.open("w") as out:
        process = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                                   env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while not port_open(port):
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the S3 server did not start: {log.read_text()[-2000:]}")
            time.sleep(0.2)
        endpoint = f"http://127.0.0.1:{port}"

        def iam(credentials: dict[str, str] | None = None):
            keys = credentials or {"AccessKeyId": "setup", "SecretAccessKey": "setup"}
            return boto3.client("iam", aws_access_key_id=keys["AccessKeyId"],
                                aws_secret_access_key=keys["SecretAccessKey"], region_name=REGION,
                                endpoint_url=endpoint)

        setup = iam()
        setup.create_user(UserName="admin")
        setup.put_user_policy(UserName="admin", PolicyName="everything", PolicyDocument=json.dumps(
            {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}))
        admin = setup.create_access_key(UserName="admin")["AccessKey"]
        as_admin = iam(admin)
        as_admin.create_user(UserName="nobody")
        nobody = as_admin.create_access_key(UserName="nobody")["AccessKey"]
        as_admin.create_user(UserName="lister")
        as_admin.put_user_policy(UserName="lister", PolicyName="list", PolicyDocument=json.dumps(
            {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "s3:ListBucket", "Resource": "*"}]}))
        lister = as_admin.create_access_key(UserName="lister")["AccessKey"]
    except BaseException:
        process.terminate()
        process.wait(timeout=20)
        raise
    keep = ("AccessKeyId", "SecretAccessKey")
    return S3Server(endpoint, {k: admin[k] for k in keep}, {k: nobody[k] for k in keep},
                    {k: lister[k] for k in keep}, process)
