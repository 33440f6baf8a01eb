"""Deterministic game telemetry: a Sumerian-merchant RPG's event envelopes.

See docs/sources/telemetry.md#raw-contract.

Every line is one envelope `{event_id, event_type, schema_version, player_id, session_id,
client_ts, server_ts, payload}` as the game's two ingest gateways log them, in server-time order:
`gateway-1.jsonl` and `gateway-2.jsonl` (each player writes to one; web clients send ISO-8601
`client_ts` and an extra `client` object, desktop clients unix seconds).

Per batch (`scale` batches a day, each with `PLAYERS_PER_BATCH` players of its own, so the pool
grows with the scale): `CONVERSATIONS_PER_BATCH` player-NPC conversations with six scripted NPCs
taken in turn (merchant, tavern keeper, boatman, temple scribe, granary overseer, caravan captain)
with 2 to 6 exchanges, some opened by an NPC greeting, some with a player line sent as two turns,
some ending on an unanswered player line, one in nine without a logged persona;
`DECISIONS_PER_BATCH` decisions over five scenarios (one an `innovation` scenario) with their
outcomes - players choose differently and fare differently (ghost replays), some decisions repeat
a game state, some carry the player's reasoning, some have untaken options replayed by the game
(counterfactual outcomes with an `option_id`) and some are followed by a reasoning trace on the
same scenario (linked reasoning); `EPISODES_PER_BATCH` wheel episodes over two tasks (successes,
hard negatives - a failure scored 0.40-0.70 after a high early step reward -, plain failures and
truncated runs; novices' episodes are routine crafting triage skips, some are `innovation`
episodes); two unlinked reasoning notes; gold-standard answers from every player (a careless
player fails most and falls below the trust floor) and peer predictions of three players per
pairing (mostly agreeing). Consent and deletion by role (`ROLES`): most players grant every data
type at login, one grants only `sft` and `cot`, one only mid-day, one never; one regular player a
batch withdraws one data type mid-day; the churner ends each day with a deletion request. Bad
lines are added at ~5% (at least one of every kind the ingest quarantines); `gateway-2.jsonl` ends
in a torn line. `data/samples/telemetry/` is `distill sample --days 2 --sources telemetry` (seed 0,
scale 1); `make run` publishes telemetry rows from it in `sft`, `dpo`, `cot` and `rlds`, each in
both splits.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from distill_assets.samples import GeneratedDay

SOURCE = "telemetry"
GATEWAYS = ("gateway-1.jsonl", "gateway-2.jsonl")
SCHEMA_VERSION = "1.4"
GAME_GENRE = "RPG_Survival_Ancient"
CONVERSATIONS_PER_BATCH = 18
DECISIONS_PER_BATCH = 20
EPISODES_PER_BATCH = 16
# the player pool grows with the scale: PLAYERS_PER_BATCH players per batch, whose position in
# their batch gives their role (everyone else is "regular": consents to everything at login)
PLAYERS_PER_BATCH = 12
ROLES = {7: "partial", 8: "late", 9: "careless", 10: "churner", 11: "undecided"}
DATA_TYPES = ("cot", "dpo", "rlds", "sft")
REPEATED_STATE_SHARE = 0.1  # decisions taken again from a game state already seen that day
EXPLAINED_SHARE = 0.6  # decisions whose player wrote down why
COUNTERFACTUAL_SHARE = 0.4  # decisions whose untaken options the game replays
LINKED_REASONING_SHARE = 0.35  # decisions followed by a reasoning trace on the same scenario
INNOVATION_EPISODE_SHARE = 0.2
GOLD_PER_PLAYER = 3
GOLD_PASS = 0.92
CARELESS_GOLD_PASS = 0.15
PEER_PAIRINGS_PER_BATCH = 2
PEER_AGREEMENT = 0.8
BAD_SHARE = 0.05
SECONDS_PER_DAY = 86_400

GOODS = ("wool", "barley", "dates", "flax", "sesame")
CITIES = ("Lagash", "Uruk", "Nippur", "Kish", "Eridu", "Umma")
QUANTITIES = ("12", "20", "30", "45")
SILVER = ("40", "60", "90", "120")
PROFESSIONS = ("Damgar", "Engar", "Nagar", "Simug", "Dub-sar", "Ma-lah")
SKILL_TIERS = ("Novice", "Apprentice", "Journeyman", "Master")

# what players add of their own to a scripted line (players do not type the same words)
ASIDES = (
    "My mother's brother sailed with a crew like that, and came back with half his cargo.",
    "I have walked since dawn from the east gate, so forgive my dusty sandals.",
    "The last time I trusted a promise, I lost two donkeys and a season of wool.",
    "My sister keeps the accounts at home and she will ask me for every figure.",
    "I have heard the priests say the river rises early this year.",
    "Speak slowly, I am still learning the customs of this city.",
    "My guild master sent me himself, so this matters to more than me.",
    "I carry a tablet from my father that vouches for my word.",
    "Last month the same offer was made to my cousin in Umma.",
    "I would rather lose a little silver than lose my good name.",
    "The children at home have not eaten meat since the new moon.",
    "I saw the omen of the three crows this morning and took it as a good sign.",
    "Half the market is already talking about this, so let us be quick.",
    "I am no scribe, but I can count to a hundred twice.",
    "Forgive me, the beer last night was stronger than I am used to.",
    "The caravan I came with leaves again in four days.",
    "My wife says I bargain too softly, so today I will try to be hard.",
    "I have little silver but a strong back and honest hands.",
    "A merchant from Dilmun told me something different yesterday.",
    "I will swear it before Utu if you need me to.",
    "The road from Kish was full of soldiers, and I do not like what that means.",
    "Remember me, I helped your servant carry the jars last harvest.",
    "If this goes well I will bring my brothers to you as well.",
    "I have a fever coming on, so I cannot stand here arguing all day.",
)
ASIDE_SHARE = 0.7  # player lines that carry an aside of the player's own


# npc_id -> (name, persona, social_context, ambiguity_level, greeting, exchanges, farewell)
NPCS: dict[str, tuple[str, str, str, str, str, list[tuple[str, str]], str]] = {
    "npc_ur_namma": (
        "Ur-Namma",
        "You are Ur-Namma, a wealthy merchant seeking investment partners. You are cautious but "
        "fair, and have been burned by dishonest partners before.",
        "Trade_Negotiation_Tappu",
        "High",
        "Ah, another who smells silver on the wind. Speak, but speak plainly.",
        [
            (
                "I propose we split the Dilmun voyage profits 60-40, with me taking the sea risk.",
                "The sea risk is real, but so is my silver. I've seen partners claim 'lost cargo' "
                "before. How do you propose we verify the manifest upon return?",
            ),
            (
                "A temple scribe seals the manifest before we sail. Each bale of {good} gets a "
                "clay bulla with your seal and mine.",
                "Sealed bullae I trust more than sworn words. But a scribe of the Nanna temple "
                "takes a tithe for his trouble. Who pays it?",
            ),
            (
                "We split the scribe's fee evenly. It protects us both. In return I want {silver} "
                "shekels in advance to hire a crew.",
                "{silver} shekels before a single boat leaves the quay? That is a great deal of "
                "faith. Half now, half when the crew stands on the deck in front of me.",
            ),
            (
                "Agreed, if you also witness the crew's oath at the quay. I will not have sailors "
                "deserting at the first storm.",
                "Then we meet at the quay at first light, with the scribe. Bring your crew list "
                "on a tablet, not in your head.",
            ),
            (
                "And if the ship is lost to a storm, the loss is shared the same 60-40 way?",
                "A storm is the will of Enki; a thief is the will of men. Storm losses we share. "
                "Missing cargo with no wreck, you repay in full.",
            ),
            (
                "That is fair. Let us press it into clay before the sun is high.",
                "Fetch the scribe. And remember: my memory is as long as the Euphrates.",
            ),
        ],
        "May Utu light our way to Dilmun.",
    ),
    "npc_ninkasi_ama": (
        "Ninkasi-ama",
        "You are Ninkasi-ama, keeper of a beer house by the harbor of Ur. You hear every rumor "
        "the sailors bring, but you share them only with those who pay or earn your trust.",
        "Information_Gathering_Tavern",
        "Medium",
        "Sit, sit. The beer is fresh today, the barley came in from Lagash.",
        [
            (
                "I'm looking for news of the copper caravans from the north. Have any sailors "
                "spoken of them?",
                "Sailors speak of many things when their cups are full. News costs a jug of my "
                "best, friend.",
            ),
            (
                "Then pour me a jug, and one for yourself. What do they say?",
                "They say the caravan master Lu-Ninurta was delayed at {city}. Bandits in the "
                "reed marshes, or so he claims.",
            ),
            (
                "You sound unconvinced. Do you think he lies?",
                "He owes silver to half the merchants of Ur. A delay is convenient when your "
                "creditors are waiting on the quay.",
            ),
            (
                "If the caravan is not truly delayed, where would he be selling the copper?",
                "Lagash pays well and asks few questions. If I were a man in debt, that is where "
                "my donkeys would walk.",
            ),
            (
                "Who in Lagash would buy that much copper without papers?",
                "The smith Dumuzi-gamil, near the south gate. But you did not hear his name "
                "from me.",
            ),
            (
                "Your secret is safe. Here are two shekels of silver for your trouble.",
                "Generous. Come back when you have more questions, and more silver.",
            ),
        ],
        "I may be back before the new moon.",
    ),
    "npc_lu_utu": (
        "Lu-Utu",
        "You are Lu-Utu, a boatman who ferries goods and travelers along the Euphrates. You are "
        "gruff and practical, and you charge by weight and by risk.",
        "Passage_Bargain_Quay",
        "Low",
        "Mind the mud. You want a boat or you want to stand there?",
        [
            (
                "I need passage to {city} for myself and {qty} bales of {good}.",
                "{qty} bales? That is a full boat. Three shekels of silver, paid before we push "
                "off.",
            ),
            (
                "Three is too much. The river is high and the current does half your work this "
                "season.",
                "High water means snags and sunken trees. The river gives speed and takes boats. "
                "Two and a half, no less.",
            ),
            (
                "Two and a half, if you also help me unload at the quay in {city}.",
                "Unloading is extra work for my back. Two and a half, and you feed me at the "
                "other end.",
            ),
            (
                "Done. When can we leave?",
                "At dawn, when the wind is still. Be here with your bales tied and dry.",
            ),
            (
                "What if it rains tonight and the {good} gets wet?",
                "Then you cover it with the reed mats in my hut. Wet cargo is your loss, not mine.",
            ),
            (
                "Fair enough. I will bring rope and an extra mat.",
                "Good. A man who brings his own rope is a man I can work with.",
            ),
        ],
        "Until dawn, then.",
    ),
    "npc_geshtinanna": (
        "Geshtinanna",
        "You are Geshtinanna, a scribe of the Eanna temple who drafts and witnesses contracts. "
        "You are precise and patient, and insist every term be written before a seal touches "
        "clay.",
        "Contract_Drafting_Temple",
        "Medium",
        "Peace of Inanna upon you. Have you come to have a tablet written?",
        [
            (
                "I need a loan contract. I will borrow {silver} shekels from the merchant "
                "Ur-Namma to buy {good}.",
                "A loan of {silver} shekels. At what interest, and when is the silver returned?",
            ),
            (
                "One fifth, as is customary, to be repaid after the harvest.",
                "One shekel in five is the king's rate for silver. After which harvest? Write "
                "'after the harvest' and a clever lender will say you meant last year's.",
            ),
            (
                "Then write the barley harvest of this year, in the month of Gusisa.",
                "Better. And if the harvest fails? Many a borrower lost his house because no one "
                "wrote down the flood clause.",
            ),
            (
                "If the storm god floods the fields, the debt waits until the next harvest "
                "without new interest.",
                "That follows the old laws. Ur-Namma may refuse it, but it is just. Who will "
                "stand as witnesses?",
            ),
            (
                "My brother and the boatman Lu-Utu.",
                "Two witnesses, named with their fathers' names. I will need those too.",
            ),
            (
                "My brother is son of Enlil-issu, and Lu-Utu is son of Ur-Baba.",
                "It is written. Return tomorrow with the lender, and both of you will press "
                "your seals.",
            ),
        ],
        "Thank you, scribe.",
    ),
    "npc_abba_kalla": (
        "Abba-kalla",
        "You are Abba-kalla, overseer of the temple granary during a famine. The stores are "
        "nearly empty and every faction in the city demands grain. You are exhausted and wary "
        "of anyone who claims special need.",
        "Famine_Allocation_Granary",
        "Critical",
        "If you have come to beg for grain, stand in line with the others.",
        [
            (
                "I do not come to beg. The canal workers have not eaten in two days, and the "
                "eastern canal will silt up without them.",
                "And the healing house has sick who will die without bread. Why should the "
                "diggers eat before the dying?",
            ),
            (
                "Because if the canal fails, next season there will be no harvest at all. "
                "Everyone dies, not just the sick.",
                "You speak like a temple accountant. The priests of the healing house speak of "
                "mercy. Both cannot eat from one empty jar.",
            ),
            (
                "Then give the workers half rations for a week, and the rest to the sick. The "
                "children can eat from their families' stores.",
                "Half rations for men digging mud in the sun? They will collapse by the third "
                "day. Have you ever carried a basket of silt?",
            ),
            (
                "I have. Then feed only the strongest thirty in full. The rest can tend the "
                "sluices.",
                "Thirty I can feed for a week. But the families of the other workers will curse "
                "my name at the gate.",
            ),
            (
                "Let me speak to them. I will explain that the canal feeds their children next "
                "year.",
                "Words do not fill bellies. But if you can keep the peace at the gate, I will "
                "release the grain at dawn.",
            ),
            (
                "I will stand at the gate myself. Record that I take responsibility.",
                "It is recorded. May the gods judge us both kindly when the harvest comes, or "
                "does not.",
            ),
        ],
        "The gods will see that we tried.",
    ),
    "npc_shu_durul": (
        "Shu-Durul",
        "You are Shu-Durul, captain of caravan guards on the roads east of Ur. You are proud, "
        "expensive, and loyal to whoever pays on time.",
        "Escort_Contract_Caravan",
        "High",
        "My spears are not cheap, and my men do not walk for promises.",
        [
            (
                "I need an escort for {qty} donkeys of {good} to {city}. How many of your men "
                "would you send?",
                "For {qty} donkeys, six spears and myself. The road past the marsh villages is "
                "not safe this season.",
            ),
            (
                "Six spears for how much silver?",
                "Ten shekels for the journey, half before we leave. And my men eat from your "
                "stores, not theirs.",
            ),
            (
                "Ten is steep. Another captain offered eight.",
                "Another captain lost half a caravan to the Martu raiders last month. Ask his "
                "merchant how much those eight shekels cost.",
            ),
            (
                "I heard that story. Nine shekels, and one more if we arrive without loss.",
                "A bonus for doing my work well. I like a merchant who pays for results. Nine and "
                "the bonus, agreed.",
            ),
            (
                "And if raiders attack, your men defend the cargo before themselves?",
                "My men defend the cargo because a captain who loses cargo never works again. "
                "But I do not ask them to die for {good}.",
            ),
            (
                "Fair. Then we leave on the third day from now, at the east gate.",
                "The third day. Have the donkeys watered. I will bring the spears.",
            ),
        ],
        "Until the third day, captain.",
    ),
}

# scenario_id -> (prompt, options, reasoning per option)
DECISIONS: dict[str, tuple[str, list[str], list[str]]] = {
    "famine_triage": (
        "The grain stores are nearly empty. Three groups need food: the temple workers "
        "maintaining the canal, the sick in the healing house, and the children in the craftsman "
        "quarter. You have enough for one group for one week. Who do you feed?",
        [
            "Feed the temple workers. Without canal maintenance, everyone will die next season.",
            "Feed the sick. They will die without food, and the others can forage.",
            "Feed the children. They are innocent and represent our future.",
        ],
        [
            "Long-term survival requires infrastructure. The children have families who might "
            "share.",
            "Those closest to death have the strongest claim on what little there is.",
            "Moral duty to protect the innocent and vulnerable.",
        ],
    ),
    "drought_water": (
        "The river is low. The temple gardens, the barley fields of the small farmers and the "
        "merchants' dye works all draw from the same canal. You control the sluice for ten days.",
        [
            "Open the sluice to the barley fields first; the dye works wait.",
            "Share the water in equal turns between all three.",
            "Give the temple its customary share and divide the rest.",
        ],
        [
            "Bread before cloth: a lost harvest cannot be bought back.",
            "Equal turns keep the peace even if no one is fully served.",
            "Breaking custom with the temple risks more than one dry season.",
        ],
    ),
    "river_ordeal": (
        "Two neighbors dispute a boundary stone. There are no witnesses. The elders suggest the "
        "River Ordeal; the accused's family begs you to judge by the old survey tablets instead.",
        [
            "Send the case to the River Ordeal as the elders advise.",
            "Judge by the survey tablets in the temple archive.",
            "Split the disputed strip and have both families swear before Utu.",
        ],
        [
            "The gods see what men cannot; the elders' custom keeps the law whole.",
            "A written survey is evidence; the river is chance.",
            "A shared loss ends the feud sooner than a verdict.",
        ],
    ),
    "locust_swarm": (
        "A locust swarm is a day's flight from the barley fields. The farmers want the temple "
        "to send every hand to harvest the green barley now; the priests want a ritual of "
        "protection first.",
        [
            "Harvest the green barley at once with every hand in the city.",
            "Hold the ritual at dawn, then harvest what the swarm leaves.",
            "Harvest the nearest fields and flood the far ones to drown the hoppers.",
        ],
        [
            "Green barley is poor bread, but it is bread; the swarm leaves nothing.",
            "A city that skips the rite loses heart before it loses grain.",
            "Water stops hoppers that walk; the near fields are saved by hands.",
        ],
    ),
    "innovation_irrigation": (
        "The shaduf lifts water too slowly for the new fields above the canal bank. You may "
        "build one new device this season with the carpenters and the rope makers.",
        [
            "Chain two shadufs, one lifting into a basin the other lifts from.",
            "Build a wheel of clay pots turned by an ox on the bank.",
            "Cut a long feeder canal from upstream so water flows in by itself.",
        ],
        [
            "Two known devices in a chain need no new craft, only a basin.",
            "A turning wheel of pots lifts without rest while the ox walks.",
            "Let the river's own fall do the lifting, at the cost of digging.",
        ],
    ),
}

REASONING: list[tuple[str, list[str], str, str]] = [
    (
        "The secondary canal serving the eastern fields loses 40% of its water to seepage. The "
        "current lining is mud brick.",
        [
            "Current mud-brick lining is porous and cracks",
            "Bitumen is waterproof but expensive",
            "Reed matting alone does not seal well",
            "Combine: reed mat foundation, thin bitumen coating, then mud brick",
            "The reed gives flexibility, bitumen seals, brick protects the bitumen",
        ],
        "Implement layered lining: reed mat, bitumen wash, mud brick",
        "Water loss reduced to 8%, cost recovered in 2 seasons",
    ),
    (
        "The kiln keeps cracking large storage jars on the last firing of the day.",
        [
            "Small cups survive the same firing, so the clay is not the problem",
            "Large jars sit nearest the fire mouth where heat rises fastest",
            "The last firing is the hottest because the kiln walls are already warm",
            "Move the large jars to the back and feed the fire more slowly at first",
        ],
        "Load large jars at the back and raise the fire gradually",
        "Cracked jars fell from one in four to one in twenty",
    ),
]


# scenario_id -> what a player weighs before deciding it (linked reasoning draws steps from here)
CONSIDERATIONS: dict[str, list[str]] = {
    "famine_triage": [
        "Count the days of grain left against the days to the next harvest",
        "The canal silts up within a season without its workers",
        "The sick have no one else to feed them",
        "Families of the craftsmen can share a little with their children",
    ],
    "drought_water": [
        "The barley harvest feeds the city through the winter",
        "The dye works pay the temple's silver tax",
        "Equal turns waste water on fields that are already lost",
        "The temple remembers every broken custom",
    ],
    "river_ordeal": [
        "The survey tablets were sealed by the king's scribe",
        "The elders will lose face if their counsel is ignored",
        "The river takes the weak swimmer, not the liar",
        "A split strip leaves both families poorer but at peace",
    ],
    "locust_swarm": [
        "Green barley is bitter but keeps if dried in the sun",
        "The swarm travels with the east wind, and the wind is rising",
        "Flooded fields drown hoppers but rot the roots",
        "The farmers will not work if the priests curse the harvest",
    ],
    "innovation_irrigation": [
        "The carpenters have cedar for only one large frame",
        "An ox needs fodder every day of the season",
        "A feeder canal takes a month of digging before it brings water",
        "Pots on a wheel crack and must be replaced from the kiln",
    ],
}
# the chance a chosen option succeeds, by option position in its scenario
SUCCESS_CHANCE = (0.7, 0.45, 0.25)
# task_description -> (episode id prefix, instruction)
TASKS: dict[str, tuple[str, str]] = {
    "Create a large storage jar using the fast wheel": (
        "ep_pottery_wheel",
        "Shape the walls upward while maintaining even thickness",
    ),
    "Glaze a ritual bowl": (
        "ep_glaze_bowl",
        "Turn the bowl slowly and lay the glaze in one even band",
    ),
}
INNOVATION_EPISODE = "innovation_wheel"


def _players(seed: int, count: int) -> list[dict[str, Any]]:
    """Return the player pool: `count` players, their role by position (see `ROLES`)."""
    rng = random.Random(f"{seed}:players")
    players = []
    for index in range(count):
        player_id = f"p_{rng.getrandbits(40):010x}"
        tier = rng.choice(SKILL_TIERS)
        players.append(
            {
                "player_id": player_id,
                "profession": rng.choice(PROFESSIONS),
                "player_skill_tier": tier,
                "pottery": 1 if tier == "Novice" else SKILL_TIERS.index(tier) + 1,
                "karma_state": rng.randint(-40, 140),
                "web": index % 3 == 2,
                "gateway": index % 2,
                "role": ROLES.get(index % PLAYERS_PER_BATCH, "regular"),
            }
        )
    return players


class _Day:
    """Accumulates one day's events per gateway."""

    def __init__(self, day: str, seed: int, scale: int, *, consent_all: bool = False) -> None:
        self.day = day
        self.consent_all = consent_all
        self.rng = random.Random(f"{seed}:{day}")
        self.start = datetime.fromisoformat(day).replace(tzinfo=UTC).timestamp()
        self.players = _players(seed, PLAYERS_PER_BATCH * scale)
        self.sessions = {p["player_id"]: f"s_{self.rng.getrandbits(32):08x}" for p in self.players}
        self.npc_order = self.rng.sample(sorted(NPCS), len(NPCS))
        self.events: list[tuple[float, int, dict[str, Any]]] = []
        self.state_hashes: list[str] = []

    def uid(self, prefix: str) -> str:
        return f"{prefix}_{self.rng.getrandbits(48):012x}"

    def at(self) -> float:
        return self.start + self.rng.uniform(6 * 3600, 22 * 3600)

    def group(self, batch: int) -> list[dict[str, Any]]:
        """Return the batch's own players (the roles of `ROLES` repeat per batch)."""
        return self.players[batch * PLAYERS_PER_BATCH : (batch + 1) * PLAYERS_PER_BATCH]

    def emit(self, player: dict[str, Any], event_type: str, ts: float, payload: dict) -> dict:
        server_ts = round(ts, 3)
        client = server_ts - round(self.rng.uniform(0.04, 0.6), 3)
        event: dict[str, Any] = {
            "event_id": self.uid("evt"),
            "event_type": event_type,
            "schema_version": SCHEMA_VERSION,
            "player_id": player["player_id"],
            "session_id": self.sessions[player["player_id"]],
            "client_ts": _iso(client) if player["web"] else round(client, 3),
            "server_ts": server_ts,
            "payload": payload,
        }
        if player["web"]:
            event["client"] = {"platform": "web", "build": "0.9.14"}
        self.events.append((server_ts, player["gateway"], event))
        return event


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _fill(text: str, slots: dict[str, str]) -> str:
    return text.format(**slots)


def _conversation(day: _Day, index: int) -> None:
    rng = day.rng
    player = rng.choice(day.players)
    npc_id = day.npc_order[index % len(day.npc_order)]
    name, persona, social, ambiguity, greeting, script, farewell = NPCS[npc_id]
    slots = {
        "good": rng.choice(GOODS),
        "city": rng.choice(CITIES),
        "qty": rng.choice(QUANTITIES),
        "silver": rng.choice(SILVER),
    }
    exchanges = 2 if index % CONVERSATIONS_PER_BATCH == 0 else rng.choice((3, 4, 4, 5, 5, 6))
    lines: list[tuple[str, str]] = []
    if rng.random() < 0.3:
        lines.append(("npc", greeting))
    for player_line, npc_line in script[:exchanges]:
        text = _fill(player_line, slots)
        if rng.random() < ASIDE_SHARE:
            text = f"{text} {rng.choice(ASIDES)}"
        head, dot, tail = text.partition(". ")
        if tail and rng.random() < 0.2:
            lines += [("player", head + dot.strip()), ("player", tail)]
        else:
            lines.append(("player", text))
        lines.append(("npc", _fill(npc_line, slots)))
    if rng.random() < 0.2:
        lines.append(("player", farewell))
    conversation_id = day.uid("conv")
    logs_persona = index % CONVERSATIONS_PER_BATCH != 4
    ts = day.at()
    for turn_index, (speaker, text) in enumerate(lines):
        payload: dict[str, Any] = {
            "conversation_id": conversation_id,
            "turn_index": turn_index,
            "speaker": speaker,
            "text": text,
            "npc_id": npc_id,
            "npc_name": name,
        }
        if turn_index == 0 and logs_persona:
            payload["npc_persona"] = persona
        payload |= {
            "quest_id": f"quest_{npc_id.removeprefix('npc_')}",
            "game_genre": GAME_GENRE,
            "player_skill_tier": player["player_skill_tier"],
            "ambiguity_level": ambiguity,
            "social_context": social,
            "karma_state": player["karma_state"],
            "profession": player["profession"],
        }
        day.emit(player, "dialogue_turn", ts, payload)
        ts += rng.uniform(6, 45)


def _label(rng: random.Random, position: int) -> str:
    """Return how a choice of the option at `position` turned out (`SUCCESS_CHANCE`)."""
    if rng.random() < SUCCESS_CHANCE[position]:
        return "Success"
    return "Partial" if rng.random() < 0.4 else "Failure"


def _outcome(day: _Day, player: dict, ts: float, decision_id: str, option: tuple[str, str]) -> None:
    """Emit the outcome of one option of a decision: the chosen one, or a replayed alternative."""
    rng = day.rng
    option_id, text = option
    label = _label(rng, int(option_id.removeprefix("opt_")) - 1)
    day.emit(
        player,
        "outcome",
        ts,
        {
            "decision_event_id": decision_id,
            "option_id": option_id,
            "outcome": f"{label}: {text}",
            "label": label,
            "reward": {"Success": 1.0, "Partial": 0.5, "Failure": 0.0}[label],
            "karma_delta": rng.randint(-8, 6),
        },
    )


def _decision(day: _Day) -> None:
    rng = day.rng
    player = rng.choice(day.players)
    scenario_id = rng.choice(sorted(DECISIONS))
    prompt, options, reasons = DECISIONS[scenario_id]
    chosen = rng.randrange(len(options))
    weights = [rng.uniform(0.1, 1.0) for _ in options]
    ids = [f"opt_{i + 1}" for i in range(len(options))]
    if day.state_hashes and rng.random() < REPEATED_STATE_SHARE:
        state_hash = rng.choice(day.state_hashes)
    else:
        state_hash = f"{rng.getrandbits(48):012x}"
        day.state_hashes.append(state_hash)
    explains = rng.random() < EXPLAINED_SHARE
    ts = day.at()
    payload: dict[str, Any] = {
        "scenario_id": scenario_id,
        "game_state_hash": state_hash,
        "prompt": prompt,
        "options": [{"option_id": i, "text": t} for i, t in zip(ids, options, strict=True)],
        "chosen_option": ids[chosen],
        "ambiguity_score": round(rng.uniform(0.35, 0.95), 2),
        "ai_policy_probs": {
            i: round(w / sum(weights), 3) for i, w in zip(ids, weights, strict=True)
        },
        "is_gold_standard": False,
    }
    if explains:
        payload["reasoning"] = reasons[chosen]
    decision = day.emit(player, "decision", ts, payload)
    _outcome(
        day,
        player,
        ts + rng.uniform(600, 3600),
        decision["event_id"],
        (ids[chosen], options[chosen]),
    )
    if rng.random() < COUNTERFACTUAL_SHARE:
        # the game replays one or two options the player did not take (a ghost run)
        others = [i for i in range(len(options)) if i != chosen]
        for other in rng.sample(others, rng.randint(1, len(others))):
            replay = ts + rng.uniform(60, 600)
            _outcome(day, player, replay, decision["event_id"], (ids[other], options[other]))
    if rng.random() < LINKED_REASONING_SHARE:
        steps = [*rng.sample(CONSIDERATIONS[scenario_id], rng.randint(2, 4)), reasons[chosen]]
        day.emit(
            player,
            "reasoning",
            ts + rng.uniform(30, 300),
            {
                "reasoning_id": day.uid("rsn"),
                "scenario_id": scenario_id,
                "context": f"Deciding for {rng.choice(QUANTITIES)} households of "
                f"{rng.choice(CITIES)}: {options[chosen]}",
                "thought_process": steps,
                "conclusion": options[chosen],
            },
        )


def _trajectory(day: _Day) -> None:
    """Emit one wheel episode: a success, a hard negative, a plain failure or a truncated run."""
    rng = day.rng
    player = rng.choice(day.players)
    task = rng.choice(sorted(TASKS))
    prefix, instruction = TASKS[task]
    if rng.random() < INNOVATION_EPISODE_SHARE:
        prefix = INNOVATION_EPISODE
    episode_id = day.uid(prefix)
    ending = rng.random()
    truncated, success, hard = ending < 0.1, 0.1 <= ending < 0.55, 0.55 <= ending < 0.8
    top = 1.0 if success else 0.65
    ts = day.at()
    moisture, speed, thickness = 0.8, 0.5, 1.0
    steps = rng.randint(5, 8)
    for step in range(steps):
        pressure, lift = round(rng.uniform(0.3, 0.8), 2), round(rng.uniform(0.1, 0.5), 2)
        reward = round(rng.uniform(0.8, 0.95) if hard and step == 1 else rng.uniform(0.2, top), 2)
        day.emit(
            player,
            "trajectory_step",
            ts,
            {
                "episode_id": episode_id,
                "step_index": step,
                "observation": {
                    "game_state": {
                        "clay_moisture": round(moisture, 2),
                        "wheel_speed": round(speed, 2),
                        "wall_thickness": round(thickness, 2),
                    },
                    "inventory": ["prepared_clay_5kg", "water_vessel", "shaping_tools"],
                    "skill_state": {
                        "pottery": player["pottery"],
                        "wheel_throwing": min(player["pottery"], 1 + step // 3),
                    },
                    "natural_language_instruction": instruction,
                },
                "action": {
                    "action_type": "wheel_manipulation",
                    "action_details": {
                        "hand_pressure": pressure,
                        "lift_rate": lift,
                        "wheel_speed_adjust": round(rng.uniform(-0.2, 0.2), 2),
                    },
                },
                "reward": reward,
            },
        )
        # a hard pull thins the wall fast: a high-entropy step triage may sample
        pull = 0.15 if rng.random() < 0.5 else 0.05
        moisture, speed, thickness = moisture - 0.02, min(speed + 0.08, 1.0), thickness - pull
        ts += rng.uniform(2, 8)
    if truncated:
        return
    if success:
        score = rng.uniform(0.72, 0.96)
    elif hard:
        score = rng.uniform(0.45, 0.68)
    else:
        score = rng.uniform(0.25, 0.6)
    day.emit(
        player,
        "episode_end",
        ts,
        {
            "episode_id": episode_id,
            "success": success,
            "task_description": task,
            "total_steps": steps,
            "competence_score": round(score, 2),
        },
    )


def _validation_events(day: _Day, batch: int) -> None:
    """Emit the batch's own reasoning notes, gold-standard answers and peer predictions."""
    rng = day.rng
    group = day.group(batch)
    for context, thoughts, conclusion, outcome in REASONING:
        day.emit(
            rng.choice(group),
            "reasoning",
            day.at(),
            {
                "reasoning_id": day.uid("rsn"),
                "context": context,
                "thought_process": thoughts,
                "conclusion": conclusion,
                "outcome": outcome,
            },
        )
    for player in group:
        pass_chance = CARELESS_GOLD_PASS if player["role"] == "careless" else GOLD_PASS
        for _ in range(GOLD_PER_PLAYER):
            passed = rng.random() < pass_chance
            day.emit(
                player,
                "gold_standard_result",
                day.at(),
                {
                    "task_id": day.uid("gold"),
                    "scenario_id": "river_ordeal",
                    "expected": "opt_2",
                    "answer": "opt_2" if passed else "opt_1",
                    "passed": passed,
                },
            )
    for _ in range(PEER_PAIRINGS_PER_BATCH):
        pairing_id, scenario_id = day.uid("pair"), rng.choice(sorted(DECISIONS))
        consensus = rng.choice(("opt_1", "opt_2", "opt_3"))
        responders = rng.sample(group, 3)
        choices = [
            consensus if rng.random() < PEER_AGREEMENT else rng.choice(("opt_1", "opt_2", "opt_3"))
            for _ in responders
        ]
        for index, (player, choice) in enumerate(zip(responders, choices, strict=True)):
            peer = choices[(index + 1) % len(choices)]
            day.emit(
                player,
                "peer_prediction",
                day.at(),
                {
                    "pairing_id": pairing_id,
                    "scenario_id": scenario_id,
                    "choice": choice,
                    "peer_choice": peer,
                    "matched": choice == peer,
                },
            )


def _consent(day: _Day, player: dict, ts: float, granted: bool, scopes: list[str]) -> None:
    day.emit(
        player,
        "consent",
        ts,
        {
            # the account service echoes the subject's id; ingest must redact it
            "player_id": player["player_id"],
            "granted": granted,
            "scopes": scopes,
            "policy_version": "2026-10",
        },
    )


def _privacy_events(day: _Day, batch: int) -> None:
    """Emit the batch's consents at login, a late grant, a withdrawal and a deletion request."""
    rng = day.rng
    login = day.start + 5 * 3600
    for player in day.group(batch):
        role = player["role"]
        if role == "late":
            # grants only mid-day: what they sent before is outside consent
            _consent(day, player, day.at(), True, list(DATA_TYPES))
        elif role != "undecided":
            scopes = ["cot", "sft"] if role == "partial" else list(DATA_TYPES)
            _consent(day, player, login + rng.uniform(0, 3600), True, scopes)
    regular = [p for p in day.group(batch) if p["role"] == "regular"]
    withdrawing, at = rng.choice(regular), day.at()
    withdrawn = rng.choice(DATA_TYPES)
    if not day.consent_all:
        # with consent_all every valid event must reach silver: nobody withdraws
        _consent(day, withdrawing, at, False, [withdrawn])
    for player in day.group(batch):
        if player["role"] == "churner":
            day.emit(
                player,
                "deletion_request",
                day.start + 23.5 * 3600 + rng.uniform(0, 1200),
                {
                    "player_id": player["player_id"],
                    "request_id": day.uid("del"),
                    "scope": "all",
                    "reason": "Player closed their account",
                },
            )


def _without(field: str) -> Callable[[dict], dict]:
    return lambda e: {k: v for k, v in e.items() if k != field}


def _with(field: str, value: Any) -> Callable[[dict], dict]:
    return lambda e: {**e, field: value}


def _with_payload(field: str, value: Any) -> Callable[[dict], dict]:
    def change(event: dict) -> dict:
        payload = {k: v for k, v in event["payload"].items() if k != field}
        return {**event, "payload": payload if value is _DROP else {**payload, field: value}}

    return change


_DROP = object()
# reason -> (event type to start from, change); text-level kinds are built in `_bad_line`
BAD_KINDS: dict[str, tuple[str, Callable[[dict], dict]] | None] = {
    "invalid_json": None,
    "not_an_object": None,
    "missing_event_id": ("decision", _without("event_id")),
    "invalid_event_id": ("outcome", _with("event_id", 90210)),
    "missing_event_type": ("reasoning", _without("event_type")),
    "unknown_event_type": ("consent", _with("event_type", "emote")),
    "missing_player_id": ("dialogue_turn", _without("player_id")),
    "invalid_player_id": ("decision", _with("player_id", 5530918274)),
    "missing_server_ts": ("trajectory_step", _without("server_ts")),
    "invalid_timestamp": ("dialogue_turn", _with("client_ts", "2026-13-45T99:00:00Z")),
    "missing_payload": ("peer_prediction", _without("payload")),
    "invalid_payload": ("outcome", _with("payload", "reward pending")),
    "missing_conversation_id": ("dialogue_turn", _with_payload("conversation_id", _DROP)),
    "missing_speaker": ("dialogue_turn", _with_payload("speaker", None)),
    "invalid_speaker": ("dialogue_turn", _with_payload("speaker", "narrator")),
    "missing_text": ("dialogue_turn", _with_payload("text", "")),
    "missing_turn_index": ("dialogue_turn", _with_payload("turn_index", _DROP)),
    "invalid_turn_index": ("dialogue_turn", _with_payload("turn_index", 2.5)),
    "unredactable_player_id": None,
    "duplicate_event_id": None,
    "torn_last_line": None,
}


def _line(event: dict) -> str:
    return json.dumps(event, ensure_ascii=False)


def _bad_line(
    day: _Day, kind: str, good: list[dict], by_type: dict[str, list[dict]]
) -> tuple[int, str]:
    """Return (gateway, line) of one bad record of `kind`, built from the day's good events."""
    rng = day.rng
    spec = BAD_KINDS[kind]
    if spec is not None:
        event_type, change = spec
        base = rng.choice(by_type[event_type])
        return rng.randrange(len(GATEWAYS)), _line(change({**base, "event_id": day.uid("evt")}))
    base = rng.choice(good)
    gateway = rng.randrange(len(GATEWAYS))
    if kind == "invalid_json":
        return gateway, _line(base).replace('"payload": {', '"payload": {{', 1)
    if kind == "not_an_object":
        return gateway, rng.choice(('"heartbeat"', "[]", "null"))
    if kind == "unredactable_player_id":
        # a legacy account id sent as digits that also appear as a JSON number in the payload
        event = {**base, "event_id": day.uid("evt"), "player_id": "4417093265"}
        event["event_type"] = "consent"
        event["payload"] = {"granted": True, "scopes": ["sft"], "account_number": 4417093265}
        return gateway, _line(event)
    raise ValueError(f"no generator for bad kind {kind}")


def _batch(state: _Day, batch: int) -> None:
    """Emit one batch: conversations, decisions, episodes, validation and privacy events."""
    for index in range(CONVERSATIONS_PER_BATCH):
        _conversation(state, batch * CONVERSATIONS_PER_BATCH + index)
    for _ in range(DECISIONS_PER_BATCH):
        _decision(state)
    for _ in range(EPISODES_PER_BATCH):
        _trajectory(state)
    _validation_events(state, batch)
    _privacy_events(state, batch)


def generate_day(
    out_dir: Path, day: str, scale: int, seed: int, *, consent_all: bool = False
) -> GeneratedDay:
    """Write one day of telemetry under `<out_dir>/telemetry/<day>/` (see the module docstring).

    `consent_all`: every player grants every data type at the start of the day and nobody
    withdraws, so every valid event reaches silver (the benchmarks measure the whole path, not
    the share that consented).
    """
    state = _Day(day, seed, scale, consent_all=consent_all)
    if consent_all:
        for player in state.players:
            state.emit(
                player,
                "consent",
                state.start,
                {
                    "granted": True,
                    "scopes": ["cot", "dpo", "rlds", "sft"],
                    "policy_version": "bench",
                },
            )
    for batch in range(scale):
        _batch(state, batch)
    state.events.sort(key=lambda item: item[0])
    good = [event for _, _, event in state.events]
    by_type: dict[str, list[dict]] = {}
    for event in good:
        by_type.setdefault(event["event_type"], []).append(event)
    files: list[list[str]] = [[] for _ in GATEWAYS]
    for _, gateway, event in state.events:
        files[gateway].append(_line(event))
    per_kind = max(1, round(len(good) * BAD_SHARE / len(BAD_KINDS)))
    # one gateway was cut off mid-write: a single torn line ends its file
    bad = {kind: 1 if kind == "torn_last_line" else per_kind for kind in BAD_KINDS}
    for _ in range(per_kind):
        # a client retry: a good line sent again, later in the same file
        gateway = state.rng.randrange(len(GATEWAYS))
        position = state.rng.randrange(len(files[gateway]))
        later = state.rng.randrange(position + 1, len(files[gateway]) + 1)
        files[gateway].insert(later, files[gateway][position])
    for kind in BAD_KINDS:
        if kind in ("duplicate_event_id", "torn_last_line"):
            continue
        for _ in range(per_kind):
            gateway, line = _bad_line(state, kind, good, by_type)
            files[gateway].insert(state.rng.randrange(len(files[gateway]) + 1), line)
    torn_event = {**state.rng.choice(good), "event_id": state.uid("evt")}
    torn_line = _line(torn_event)
    files[-1].append(torn_line[: int(len(torn_line) * 0.7)])
    folder = Path(out_dir) / SOURCE / day
    folder.mkdir(parents=True, exist_ok=True)
    written = GeneratedDay(source=SOURCE, day=day, bad_records=bad)
    for name, lines in zip(GATEWAYS, files, strict=True):
        path = folder / name
        torn = lines is files[-1]
        path.write_text("\n".join(lines) + ("" if torn else "\n"), encoding="utf-8")
        written.files.append(path)
        written.records += len(lines)
    return written
