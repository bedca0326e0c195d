# One image with every environment of envs/ installed without conda: Python, R with lme4 and blme,
# and the pinned packages of requirements.txt, all through scripts/setup.sh (the one install script;
# CI runs it too). For snakemake --sdm apptainer on sites without conda (docs/hpc.md, "Sites without conda"):
#   docker build -t earnest:1 .                       # on a machine with Docker
#   apptainer build earnest.sif docker-daemon://earnest:1
# then set `containers: {all: /path/to/earnest.sif}` in the config.
# Debian 12 (bookworm) gives R 4.2 and lme4 1.1-31, the pair envs/stats.yaml pins and the tests run against.
# PYTHON: 3.11, the Python the tests run on; 3.12 for an image of envs/score-reference.yaml (the authors' Python):
#   docker build --build-arg PYTHON=3.12 -t earnest-py312:1 .
ARG PYTHON=3.11
FROM python:${PYTHON}-slim-bookworm

ENV DEBIAN_FRONTEND=noninteractive PIP_NO_CACHE_DIR=1 PYTHONDONTWRITEBYTECODE=1
# a compiler and R's headers for the packages pip may build from source (rpy2's API mode)
RUN apt-get update -qq && apt-get install -y -qq --no-install-recommends build-essential r-base-dev \
    && rm -rf /var/lib/apt/lists/*

WORKDIR /opt/earnest
# the install script and the lists it reads first, so that a code change does not reinstall the packages
COPY requirements.txt pyproject.toml ./
COPY scripts/setup.sh scripts/setup.sh
COPY src src
COPY config/schema.yaml config/schema.yaml
RUN bash scripts/setup.sh && rm -rf /var/lib/apt/lists/* /root/.cache
# the rest of the workflow (rules, scripts, resources); a job run by Snakemake uses the workflow's
# own src/ when its folder is bound into the container (docs/hpc.md), else this copy
COPY . .
