"""Scrapes mcpbox's /metrics and parses it with the official Prometheus Python
client's text parser (prometheus_client.parser, pinned in requirements.txt).

Usage: python scrape_metrics.py URL [TOKEN]

Prints one JSON object: the Content-Type, and every sample as
{"name", "labels", "value"} under the family (name and type) it belongs to. A
text the parser rejects is an error (exit 1), as it would be for Prometheus.
"""

import json
import sys
import urllib.request

from prometheus_client.parser import text_string_to_metric_families


def main() -> None:
    url = sys.argv[1]
    request = urllib.request.Request(url)
    if len(sys.argv) > 2:
        request.add_header("Authorization", "Bearer " + sys.argv[2])
    with urllib.request.urlopen(request, timeout=30) as response:
        content_type = response.headers.get("Content-Type")
        text = response.read().decode("utf-8")
    families = []
    for family in text_string_to_metric_families(text):
        families.append(
            {
                "name": family.name,
                "type": family.type,
                "help": family.documentation,
                "samples": [
                    {"name": s.name, "labels": s.labels, "value": s.value}
                    for s in family.samples
                ],
            }
        )
    print(json.dumps({"contentType": content_type, "families": families}))


if __name__ == "__main__":
    main()
