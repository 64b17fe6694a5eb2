"""The package list: apron, with the top-level folders extractors/, generated/ and pins/ installed
inside it as apron.extractors, apron.generated and apron.pins (no generic top-level import names).
Everything else is in pyproject.toml."""

from setuptools import find_namespace_packages, setup

NAMESPACE = {"apron.extractors": "extractors", "apron.generated": "generated", "apron.pins": "pins"}

# namespace discovery: a data folder without __init__.py (apron/samples) is a package too
packages = find_namespace_packages(include=["apron", "apron.*"])
for package, folder in NAMESPACE.items():
    packages += [package, *(f"{package}.{sub}" for sub in find_namespace_packages(folder))]

setup(packages=packages, package_dir=NAMESPACE)
