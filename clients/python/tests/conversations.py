"""Short conversations the tests remember, and reading what recall found."""

SISTER = [
    {"role": "user",
     "content": "My sister Ana moved to Lisbon last spring; she teaches piano there."},
    {"role": "assistant", "content": "That sounds lovely. Is she enjoying Lisbon so far?"},
    {"role": "user", "content": "Very much, she says the light over the Tagus is unreal."},
]
DOG = [
    {"role": "user", "content": "I just adopted a beagle called Rex from the shelter in Leeds."},
    {"role": "assistant", "content": "Congratulations on Rex! Beagles are great company."},
]


def contents(recall: dict) -> list:
    return [hit["content"] for hit in recall["results"]]
