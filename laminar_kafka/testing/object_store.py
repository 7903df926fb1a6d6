"""An S3 API on loopback for tests of pipelines that keep checkpoints in `s3://`.

It is moto's server (a real HTTP S3 API, `pip install "moto[server]"`), started in
this process. `environment()` holds the variables every AWS client reads (s3fs
included): set them before Spark starts, so that executors inherit them too.
"""

from __future__ import annotations

import uuid
from typing import Any

from laminar_kafka.errors import ConfigError


class LocalS3:
    """A moto S3 server on 127.0.0.1; `bucket()` makes a fresh bucket and returns its URL."""

    def __init__(self) -> None:
        try:
            from moto.server import ThreadedMotoServer
        except ImportError:
            raise ConfigError('LocalS3 needs moto\'s server: pip install "moto[server]"') from None
        self._server: Any = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
        self._server.start()
        host, port = self._server.get_host_and_port()
        self.endpoint = f"http://{host}:{port}"

    def environment(self) -> dict[str, str]:
        return {
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_DEFAULT_REGION": "us-east-1",
        }

    def bucket(self, prefix: str = "laminar") -> str:
        import boto3

        name = f"{prefix}-{uuid.uuid4().hex[:10]}"
        client = boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
            region_name="us-east-1",
        )
        client.create_bucket(Bucket=name)
        return f"s3://{name}"

    def stop(self) -> None:
        self._server.stop()
