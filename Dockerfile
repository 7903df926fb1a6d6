# laminar-kafka in a container: Python 3.11, a Java 17 runtime for Spark, the
# package with its example pipelines and schemas. docker-compose.yml builds it
# and runs `laminar-kafka demo` against its Kafka; any other command works too:
#
#   docker build -t laminar-kafka .
#   docker run --rm laminar-kafka laminar-kafka run --help
#
# Debian bookworm: its openjdk-17 is the Java 17 that PySpark 4 runs on.
FROM python:3.11-slim-bookworm

# procps: Spark's launch scripts call `ps`. The distribution's current patch
# releases, as every image rebuild should take them.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends openjdk-17-jre-headless procps \
    && rm -rf /var/lib/apt/lists/*

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /src
COPY pyproject.toml README.md ./
COPY laminar_kafka ./laminar_kafka
COPY schemas ./schemas
COPY pipelines ./pipelines
# A wheel install, as `pip install laminar-kafka` does: the example pipelines
# and schemas come with the package (laminar_kafka/_pipelines, _schemas).
RUN pip install --no-cache-dir . && rm -rf /src

RUN useradd --create-home --uid 1000 laminar
USER 1000
WORKDIR /home/laminar

CMD ["laminar-kafka", "--help"]
