"""Long first-person preferences, written one by one for the ``preferences`` calibration set.

Each item is one preference with a condition, a reason and a hedge, told six ways:

- ``gold``: the preference as a user would say it;
- ``same``: two paraphrases that state the same preference (reordered, other words, the
  reason restated, the hedge worded differently but as strong);
- ``flip``: the same wording with the polarity reversed (likes -> dislikes);
- ``condition``: the same preference under another condition (weekends -> weekdays);
- ``value``: the same topic with another value (Python -> Go).
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["ITEMS", "Item"]


class Item(NamedTuple):
    key: str
    gold: str
    same: tuple[str, str]
    flip: str
    condition: str
    value: str


ITEMS = [
    Item(
        "learning-subscriptions",
        "I'd rather not pay monthly for learning apps; I prefer one-off purchases because "
        "subscriptions pile up.",
        (
            "Subscriptions for learning apps tend to pile up, so I'd rather buy them once "
            "than pay every month.",
            "For educational apps I prefer a single purchase over a monthly fee, since "
            "recurring charges keep adding up for me.",
        ),
        "I'm happy to pay monthly for learning apps; I prefer subscriptions over one-off "
        "purchases because they stay updated.",
        "I'd rather not pay monthly for streaming services; I prefer one-off purchases "
        "because subscriptions pile up.",
        "I'd rather not pay monthly for learning apps; I prefer free open courses because "
        "subscriptions pile up.",
    ),
    Item(
        "coffee-mornings",
        "On weekday mornings I usually want my coffee black, no sugar, because sweet drinks "
        "make me crash before lunch.",
        (
            "Sweet drinks give me a crash before noon, so on workday mornings I mostly take "
            "my coffee black without sugar.",
            "I generally drink black, unsweetened coffee in the morning during the work week; "
            "sugar early on makes me slump by lunchtime.",
        ),
        "On weekday mornings I usually want my coffee with plenty of sugar, because "
        "bitter drinks make me crash before lunch.",
        "On weekend evenings I usually want my coffee black, no sugar, because sweet "
        "drinks make me crash before lunch.",
        "On weekday mornings I usually want my coffee with oat milk, no sugar, because "
        "sweet drinks make me crash before lunch.",
    ),
    Item(
        "python-scripts",
        "For quick data scripts I'd pick Python every time, mostly because the libraries "
        "save me hours, though I'm not dogmatic about it.",
        (
            "I'm not religious about it, but when I write a small data script I reach for "
            "Python; its libraries save me a lot of time.",
            "Python is my usual choice for short data-processing scripts, largely because "
            "the ecosystem of libraries spares me hours of work.",
        ),
        "For quick data scripts I'd avoid Python every time, mostly because the libraries "
        "cost me hours, though I'm not dogmatic about it.",
        "For large backend services I'd pick Python every time, mostly because the "
        "libraries save me hours, though I'm not dogmatic about it.",
        "For quick data scripts I'd pick Go every time, mostly because the tooling saves "
        "me hours, though I'm not dogmatic about it.",
    ),
    Item(
        "aisle-seat-long-flights",
        "On long-haul flights I really prefer an aisle seat, since I get up a lot to "
        "stretch my legs; I don't mind so much on short hops.",
        (
            "Because I stand up often to stretch, an aisle seat is what I want on long "
            "flights; for short trips it matters less.",
            "I like sitting on the aisle when a flight is long, as I need to walk around "
            "and stretch fairly often.",
        ),
        "On long-haul flights I really dislike an aisle seat, since people bump me all "
        "the time; I don't mind so much on short hops.",
        "On short domestic hops I really prefer an aisle seat, since I get up a lot to "
        "stretch my legs; I don't mind so much on long flights.",
        "On long-haul flights I really prefer a window seat, since I like to lean on the "
        "wall and sleep; I don't mind so much on short hops.",
    ),
    Item(
        "meetings-afternoon",
        "If I have to take meetings, I'd much rather have them in the afternoon; my "
        "mornings are when I can actually concentrate on deep work.",
        (
            "My focus is best in the morning, so I try to push meetings to the afternoon "
            "whenever they can't be avoided.",
            "Meetings are better for me after lunch, because the morning hours are the only "
            "time I really get focused work done.",
        ),
        "If I have to take meetings, I'd much rather not have them in the afternoon; my "
        "afternoons are when I can actually concentrate on deep work.",
        "If I have to take meetings, I'd much rather have them in the afternoon on "
        "Fridays only; my other days are for deep work.",
        "If I have to take meetings, I'd much rather have them first thing in the morning; "
        "my afternoons are when I can actually concentrate on deep work.",
    ),
    Item(
        "paper-books-travel",
        "When I travel I tend to prefer an e-reader over paper books, mainly because it "
        "keeps my bag light, although at home I still love print.",
        (
            "At home print is still my favourite, but on trips I usually take an e-reader "
            "instead of books so my luggage stays light.",
            "I generally pack a Kindle rather than physical books when travelling; it "
            "saves weight in my bag, even if I read paper at home.",
        ),
        "When I travel I tend to avoid an e-reader and take paper books, mainly because "
        "screens tire my eyes, although at home I still love print.",
        "At home I tend to prefer an e-reader over paper books, mainly because it keeps my "
        "shelves clear, although on trips I still love print.",
        "When I travel I tend to prefer audiobooks over paper books, mainly because they "
        "keep my bag light, although at home I still love print.",
    ),
    Item(
        "running-early",
        "In summer I'd rather run early, before seven, because the heat later in the day "
        "wipes me out; in winter I'm more flexible.",
        (
            "The midday heat exhausts me, so during the summer months I prefer to go for my "
            "runs before 7 am; winter is a different story.",
            "I like getting my summer runs done first thing, ahead of seven o'clock, since "
            "running in the later heat drains me completely.",
        ),
        "In summer I'd rather not run early, before seven, because my body is too stiff "
        "at that hour; in winter I'm more flexible.",
        "In winter I'd rather run early, before seven, because the dark evenings wipe me "
        "out; in summer I'm more flexible.",
        "In summer I'd rather run late, after nine at night, because the heat earlier in "
        "the day wipes me out; in winter I'm more flexible.",
    ),
    Item(
        "texts-over-calls",
        "For anything non-urgent I much prefer a text to a phone call, because calls "
        "interrupt whatever I'm doing; for emergencies, call me, obviously.",
        (
            "Unless it's urgent, please message me instead of calling; a ringing phone "
            "breaks my concentration.",
            "I like written messages better than calls for routine things, since a call "
            "pulls me away from what I'm in the middle of.",
        ),
        "For anything non-urgent I much prefer a phone call to a text, because texts "
        "drag on all day; for emergencies, call me, obviously.",
        "Only for urgent matters do I prefer a text to a phone call, because calls "
        "interrupt whatever I'm doing; for small things, call me.",
        "For anything non-urgent I much prefer an email to a phone call, because calls "
        "interrupt whatever I'm doing; for emergencies, call me, obviously.",
    ),
    Item(
        "spicy-food-weekends",
        "I love really spicy food, but only on weekends, because it keeps me up at night "
        "and I can't afford that before work.",
        (
            "Very hot, spicy dishes are a favourite of mine, though I keep them to the "
            "weekend since they ruin my sleep before a workday.",
            "Spicy food disturbs my sleep, so I save the fiery dishes I enjoy for Saturdays "
            "and Sundays.",
        ),
        "I can't stand really spicy food, even on weekends, because it keeps me up at "
        "night and I can't afford that before work.",
        "I love really spicy food, but only on weeknights, because it keeps me up at "
        "night and that's fine before a workday.",
        "I love really sour food, but only on weekends, because it keeps me up at night "
        "and I can't afford that before work.",
    ),
    Item(
        "rent-near-work",
        "I'd rather rent a small flat close to the office than a big house in the suburbs; "
        "commuting drains me more than a lack of space does, I think.",
        (
            "A long commute wears me out more than a cramped home, so I'd choose a little "
            "apartment near work over a large suburban house.",
            "Living near my job in a smaller place suits me better than a spacious house "
            "far out, as I believe travel time is what tires me most.",
        ),
        "I'd rather not rent a small flat close to the office than a big house in the "
        "suburbs; a lack of space drains me more than commuting does, I think.",
        "I'd rather rent a small flat close to the office than a big house in the suburbs, "
        "but only once the kids have left home; commuting drains me then.",
        "I'd rather buy a small flat close to the office than rent a big house in the "
        "suburbs; commuting drains me more than a lack of space does, I think.",
    ),
    Item(
        "jazz-while-cooking",
        "When I cook dinner I like having jazz on in the background; it relaxes me, "
        "although I'd switch it off if guests are chatting.",
        (
            "Jazz playing quietly while I make dinner calms me down, though I turn it off "
            "once guests start talking.",
            "I enjoy some background jazz as I prepare the evening meal, because it helps me "
            "unwind; with people over I'd rather have silence.",
        ),
        "When I cook dinner I hate having jazz on in the background; it stresses me, "
        "although I'd leave it on if guests are chatting.",
        "When I work out at the gym I like having jazz on in the background; it relaxes "
        "me, although I'd switch it off if friends are chatting.",
        "When I cook dinner I like having podcasts on in the background; they relax me, "
        "although I'd switch them off if guests are chatting.",
    ),
    Item(
        "cats-small-flat",
        "As long as I live in a small flat, I'd prefer a cat to a dog, since cats cope "
        "better with little space, though I do adore dogs.",
        (
            "I adore dogs, but while my apartment is this tiny a cat makes more sense to "
            "me, because cats handle small homes better.",
            "Given how small my place is, a cat would suit me more than a dog; cats are "
            "fine in a cramped space.",
        ),
        "As long as I live in a small flat, I'd prefer a dog to a cat, since dogs cope "
        "better with little space, though I do adore cats.",
        "Once I move to a house with a garden, I'd prefer a cat to a dog, since cats cope "
        "better outdoors, though I do adore dogs.",
        "As long as I live in a small flat, I'd prefer a rabbit to a dog, since rabbits "
        "cope better with little space, though I do adore dogs.",
    ),
    Item(
        "tea-evening",
        "In the evenings I generally stick to herbal tea rather than black tea, because "
        "caffeine after six keeps me awake.",
        (
            "Caffeine late in the day keeps me up, so after six I usually drink herbal "
            "infusions instead of regular black tea.",
            "I mostly choose caffeine-free herbal tea over black tea at night; anything "
            "with caffeine past 6 pm ruins my sleep.",
        ),
        "In the evenings I generally avoid herbal tea and drink black tea, because "
        "caffeine after six doesn't bother me at all.",
        "In the mornings I generally stick to herbal tea rather than black tea, because "
        "caffeine early on makes me jittery.",
        "In the evenings I generally stick to hot chocolate rather than black tea, "
        "because caffeine after six keeps me awake.",
    ),
    Item(
        "train-over-plane",
        "For trips under five hours I'd honestly rather take the train than fly, partly "
        "for the climate and partly because airports stress me out.",
        (
            "Airports make me anxious and I care about emissions, so when a journey takes "
            "less than five hours I choose rail over flying.",
            "If it's a shorter trip, up to about five hours, I'd sooner go by train than by "
            "plane; it's better for the planet and I find airports stressful.",
        ),
        "For trips under five hours I'd honestly rather fly than take the train, partly "
        "for the speed and partly because stations stress me out.",
        "For trips over ten hours I'd honestly rather take the train than fly, partly for "
        "the climate and partly because airports stress me out.",
        "For trips under five hours I'd honestly rather take the bus than fly, partly for "
        "the climate and partly because airports stress me out.",
    ),
    Item(
        "standing-desk-afternoons",
        "I like to use a standing desk in the afternoons, because sitting after lunch "
        "makes me sleepy, though my knees won't let me stand all day.",
        (
            "After lunch I get drowsy if I sit, so I switch to standing at my desk for the "
            "afternoon; standing the whole day hurts my knees though.",
            "Standing while I work suits me in the second half of the day, since sitting "
            "then makes me doze off; I can't do it from morning to night.",
        ),
        "I hate using a standing desk in the afternoons, because standing after lunch "
        "makes me sleepy, though my knees are fine with standing all day.",
        "I like to use a standing desk in the early mornings, because sitting before "
        "breakfast makes me sleepy, though my knees won't let me stand all day.",
        "I like to use a treadmill desk in the afternoons, because sitting after lunch "
        "makes me sleepy, though my knees won't let me walk all day.",
    ),
    Item(
        "dark-mode-night",
        "I prefer dark mode on my devices, at least at night, since bright screens give "
        "me headaches in a dim room.",
        (
            "Bright screens in a dark room give me a headache, so at night I switch my "
            "phone and laptop to a dark theme.",
            "When it's late I'd rather have a dark interface on my gadgets; white "
            "backgrounds in low light make my head hurt.",
        ),
        "I dislike dark mode on my devices, at least at night, since dark screens give "
        "me headaches in a dim room.",
        "I prefer dark mode on my devices, at least outdoors at midday, since bright "
        "screens give me headaches in the sun.",
        "I prefer a sepia mode on my devices, at least at night, since bright screens give "
        "me headaches in a dim room.",
    ),
    Item(
        "cash-at-markets",
        "At farmers' markets I'd rather pay cash than card, because the small stallholders "
        "lose a cut to card fees, although I use cards everywhere else.",
        (
            "Card fees eat into what small market sellers earn, so I bring cash to the "
            "farmers' market even though I pay by card in other shops.",
            "I tend to use banknotes at the weekend market stalls rather than my card; the "
            "fees hurt small growers, while elsewhere I'm happy with cards.",
        ),
        "At farmers' markets I'd rather pay by card than cash, because carrying change is "
        "a hassle, although I use cash everywhere else.",
        "At big supermarkets I'd rather pay cash than card, because the chains take a cut "
        "from card fees, although I use cards everywhere else.",
        "At farmers' markets I'd rather pay by phone than card, because the small "
        "stallholders lose a cut to card fees, although I use cards everywhere else.",
    ),
    Item(
        "board-games-cooperative",
        "With my family I prefer cooperative board games over competitive ones, because "
        "winning and losing starts arguments; with friends I'm fine either way.",
        (
            "Competitive games lead to fights in my family, so at home we play cooperative "
            "ones; among friends I don't mind.",
            "When we play as a family I'd choose games where we all work together instead "
            "of against each other, since losing causes squabbles.",
        ),
        "With my family I prefer competitive board games over cooperative ones, because "
        "working together starts arguments; with friends I'm fine either way.",
        "With my friends I prefer cooperative board games over competitive ones, because "
        "winning and losing starts arguments; with family I'm fine either way.",
        "With my family I prefer card games over board games, because long setups start "
        "arguments; with friends I'm fine either way.",
    ),
    Item(
        "hotel-quiet-room",
        "When I book a hotel for work, I always ask for a quiet room away from the lift, "
        "because I'm a light sleeper and I need to be sharp the next day.",
        (
            "I sleep lightly, so on business trips I request a room far from the elevator "
            "where it's quiet; I have to be alert the following morning.",
            "For work stays I make a point of getting a calm room that isn't next to the "
            "lifts, as noise wakes me and I need a clear head the next day.",
        ),
        "When I book a hotel for work, I never bother asking for a quiet room away from "
        "the lift, because I sleep through anything anyway.",
        "When I book a hotel for a holiday, I always ask for a quiet room away from the "
        "lift, because I'm a light sleeper and I like to sleep in.",
        "When I book a hotel for work, I always ask for a room with a bathtub, because I'm "
        "a light sleeper and a bath helps me settle.",
    ),
    Item(
        "news-in-print-sunday",
        "On Sundays I like to read the news in a printed paper rather than online; it "
        "feels slower and less anxious, though during the week I just skim apps.",
        (
            "A paper newspaper on a Sunday is how I prefer to catch up, because it is "
            "calmer than scrolling; weekdays I only glance at news apps.",
            "I enjoy a physical newspaper at the weekend, Sunday especially, instead of news "
            "sites, since it makes the news feel less stressful.",
        ),
        "On Sundays I dislike reading the news in a printed paper rather than online; it "
        "feels slow and cluttered, though during the week I just skim apps.",
        "On weekday mornings I like to read the news in a printed paper rather than "
        "online; it feels slower, though on Sundays I just skim apps.",
        "On Sundays I like to listen to the news on the radio rather than online; it "
        "feels slower and less anxious, though during the week I just skim apps.",
    ),
    Item(
        "gym-off-peak",
        "I only go to the gym off-peak, late in the evening, because I can't stand "
        "waiting for machines; if it's crowded I'd rather just leave.",
        (
            "Waiting around for equipment drives me mad, so I train late at night when the "
            "gym is empty, and I walk out if it's packed.",
            "I pick quiet hours for the gym, usually late evenings, since queuing for the "
            "machines is something I really can't bear.",
        ),
        "I love going to the gym at peak times, late in the evening, because the crowd "
        "motivates me; if it's empty I'd rather just leave.",
        "I only go to the gym off-peak, early on weekend mornings, because I can't stand "
        "waiting for machines; if it's crowded I'd rather just leave.",
        "I only go to the pool off-peak, late in the evening, because I can't stand "
        "waiting for a lane; if it's crowded I'd rather just leave.",
    ),
    Item(
        "vegetarian-weekdays",
        "I try to eat vegetarian on weekdays, mostly for my health, but I'm relaxed about "
        "it and will have meat at weekend dinners with friends.",
        (
            "Monday to Friday I mostly avoid meat for health reasons; at weekend meals with "
            "friends I don't hold myself to it.",
            "During the working week I aim for meat-free meals because it's healthier for "
            "me, though I'm not strict at weekend get-togethers.",
        ),
        "I try not to eat vegetarian on weekdays, mostly for my health, but I'm relaxed "
        "about it and will skip meat at weekend dinners with friends.",
        "I try to eat vegetarian on weekends, mostly for my health, but I'm relaxed about "
        "it and will have meat at weekday lunches with colleagues.",
        "I try to eat vegan on weekdays, mostly for my health, but I'm relaxed about it "
        "and will have cheese at weekend dinners with friends.",
    ),
    Item(
        "podcasts-commute",
        "On my commute I usually prefer podcasts to music, because I like learning "
        "something on the way, though when I'm tired I'll put on an album.",
        (
            "I use my journey to work to learn things, so I mostly listen to podcasts rather "
            "than songs, unless I'm worn out, then it's music.",
            "Podcasts beat music for me on the way to and from the office, as I enjoy "
            "picking up new ideas; an album is for the exhausted days.",
        ),
        "On my commute I usually avoid podcasts and prefer music, because I don't want "
        "to learn anything on the way, though when I'm bored I'll put on a podcast.",
        "At the gym I usually prefer podcasts to music, because I like learning something "
        "while I lift, though when I'm tired I'll put on an album.",
        "On my commute I usually prefer audiobooks to music, because I like a long story "
        "on the way, though when I'm tired I'll put on an album.",
    ),
    Item(
        "window-open-sleep",
        "I sleep with the window open unless it's below freezing, since a stuffy room "
        "gives me a headache in the morning.",
        (
            "Stuffy bedrooms leave me with a morning headache, so I keep the window open at "
            "night except when it's properly freezing.",
            "As long as it isn't under zero degrees outside, I like the window open while I "
            "sleep; stale air makes my head ache when I wake.",
        ),
        "I sleep with the window shut unless it's a heatwave, since a draughty room gives "
        "me a headache in the morning.",
        "I sleep with the window open only when it's above twenty-five degrees, since a "
        "stuffy room gives me a headache in the morning.",
        "I sleep with the fan on unless it's below freezing, since a stuffy room gives me "
        "a headache in the morning.",
    ),
    Item(
        "rust-for-cli",
        "For command-line tools I'd lean towards Rust, mainly because single static "
        "binaries are easy to ship, although compile times annoy me a bit.",
        (
            "Shipping one static binary is so convenient that I usually write CLI tools in "
            "Rust, even if the slow compiles irritate me somewhat.",
            "My preference for terminal utilities is Rust; distributing a self-contained "
            "binary is simple, despite the compiler being slowish.",
        ),
        "For command-line tools I'd steer away from Rust, mainly because single static "
        "binaries are a pain to debug, although compile times don't annoy me.",
        "For web front ends I'd lean towards Rust, mainly because WebAssembly bundles are "
        "easy to ship, although compile times annoy me a bit.",
        "For command-line tools I'd lean towards Zig, mainly because single static "
        "binaries are easy to ship, although compile times annoy me a bit.",
    ),
    Item(
        "photos-raw-travel",
        "When I photograph landscapes on holiday, I prefer to shoot in RAW rather than "
        "JPEG, because I like fixing the light later, even if the files are huge.",
        (
            "On trips I take my landscape shots as RAW files instead of JPEGs; the big "
            "files are worth it since I enjoy correcting the exposure afterwards.",
            "I'd rather capture holiday scenery in RAW format, because adjusting the light "
            "in editing matters more to me than the file size.",
        ),
        "When I photograph landscapes on holiday, I prefer not to shoot in RAW but in "
        "JPEG, because I hate fixing the light later and the files are huge.",
        "When I photograph my kids at home, I prefer to shoot in RAW rather than JPEG, "
        "because I like fixing the light later, even if the files are huge.",
        "When I photograph landscapes on holiday, I prefer to shoot on film rather than "
        "digital, because I like the grain, even if it costs more.",
    ),
    Item(
        "decaf-after-lunch",
        "After lunch I'll only drink decaf, if I'm honest, because regular coffee in the "
        "afternoon makes my heart race.",
        (
            "Regular coffee later in the day gives me palpitations, so from lunchtime on I "
            "stick to decaffeinated.",
            "To be honest, past midday it's decaf or nothing for me; caffeinated coffee in "
            "the afternoon sets my heart pounding.",
        ),
        "After lunch I'll never drink decaf, if I'm honest, because regular coffee in the "
        "afternoon is the only thing that keeps me going.",
        "Before breakfast I'll only drink decaf, if I'm honest, because regular coffee on "
        "an empty stomach makes my heart race.",
        "After lunch I'll only drink green tea, if I'm honest, because regular coffee in "
        "the afternoon makes my heart race.",
    ),
    Item(
        "walking-meetings",
        "For one-to-one meetings I quite like walking outside instead of sitting in a "
        "room, as long as it's not raining; people open up more on a walk.",
        (
            "People talk more freely while walking, so for meetings with just one other "
            "person I'd rather go for a stroll than book a room, weather permitting.",
            "If it's dry, I enjoy doing my one-on-ones on foot outdoors rather than in a "
            "meeting room, because conversations get more open.",
        ),
        "For one-to-one meetings I really dislike walking outside instead of sitting in a "
        "room, even if it's not raining; people get distracted on a walk.",
        "For large team meetings I quite like walking outside instead of sitting in a "
        "room, as long as it's not raining; people open up more on a walk.",
        "For one-to-one meetings I quite like going to a cafe instead of sitting in a "
        "room, as long as it's not too busy; people open up more over coffee.",
    ),
    Item(
        "budget-airlines-short",
        "I don't mind budget airlines for short trips without checked luggage, but for "
        "anything long I'd pay more for a proper carrier because comfort matters then.",
        (
            "For quick hand-luggage-only trips low-cost airlines are fine by me; on long "
            "journeys I'll spend extra on a full-service airline for the comfort.",
            "Cheap carriers are okay when I'm flying a short distance with just a cabin "
            "bag, whereas for long flights comfort is worth paying a regular airline for.",
        ),
        "I refuse to fly budget airlines even for short trips without checked luggage, "
        "and for anything long I'd pay more for a proper carrier too.",
        "I don't mind budget airlines for long trips with checked luggage, but for "
        "anything short I'd pay more for a proper carrier because comfort matters then.",
        "I don't mind overnight buses for short trips without checked luggage, but for "
        "anything long I'd pay more for a flight because comfort matters then.",
    ),
    Item(
        "handwritten-notes-lectures",
        "In lectures I'd rather take notes by hand than on a laptop; writing helps me "
        "remember things, although I type up the important bits afterwards.",
        (
            "Writing with a pen makes things stick for me, so during lectures I take "
            "handwritten notes, then type the key points later.",
            "I prefer pen and paper over typing when I'm in a lecture, because it helps my "
            "memory; I do digitise the main parts afterwards.",
        ),
        "In lectures I'd rather not take notes by hand but on a laptop; writing doesn't "
        "help me remember things, so I type everything straight away.",
        "In team meetings I'd rather take notes by hand than on a laptop; writing helps me "
        "remember things, although I type up the important bits afterwards.",
        "In lectures I'd rather record audio than take notes on a laptop; listening again "
        "helps me remember things, although I type up the important bits afterwards.",
    ),
    Item(
        "kids-screen-weekdays",
        "On school nights I'd prefer my kids had no screens after dinner, because it "
        "makes bedtime a battle; at weekends I'm more lenient.",
        (
            "Screens after the evening meal turn bedtime into a fight, so on school nights "
            "I'd like the children to stay off them; weekends are looser.",
            "I try to keep my children away from tablets and TV after dinner during the "
            "school week, since otherwise getting them to bed is a struggle.",
        ),
        "On school nights I'm happy for my kids to have screens after dinner, because it "
        "makes bedtime easier; at weekends I'm stricter.",
        "On weekend mornings I'd prefer my kids had no screens before breakfast, because "
        "it makes them grumpy; on school days I'm more lenient.",
        "On school nights I'd prefer my kids had no sugar after dinner, because it makes "
        "bedtime a battle; at weekends I'm more lenient.",
    ),
    Item(
        "indoor-plants-low-light",
        "Because my flat faces north, I tend to prefer low-light houseplants like ferns "
        "rather than succulents, which just die on me here.",
        (
            "Succulents keep dying in my north-facing apartment, so I mostly go for plants "
            "that cope with shade, such as ferns.",
            "With so little sun in my north-facing home, shade-tolerant plants like ferns "
            "suit me better than succulents do.",
        ),
        "Because my flat faces north, I tend to avoid low-light houseplants like ferns and "
        "buy succulents, which do fine here.",
        "Because my balcony faces south, I tend to prefer low-light plants like ferns "
        "rather than succulents, which just scorch on me there.",
        "Because my flat faces north, I tend to prefer low-light houseplants like snake "
        "plants rather than orchids, which just die on me here.",
    ),
    Item(
        "email-batch",
        "During busy weeks I'd rather check email just twice a day, at noon and at five, "
        "because constant notifications wreck my focus; in quiet weeks I'm less strict.",
        (
            "Notifications all day destroy my concentration, so when work is hectic I only "
            "look at my inbox around midday and again at five.",
            "When a week is packed I limit myself to two email sessions a day, lunchtime and "
            "5 pm, since the steady pings ruin my focus.",
        ),
        "During busy weeks I'd rather not limit email to twice a day, because waiting for "
        "replies wrecks my focus; in quiet weeks I'm stricter.",
        "During holidays I'd rather check email just twice a day, at noon and at five, "
        "because constant notifications wreck my rest; in busy weeks I'm less strict.",
        "During busy weeks I'd rather check email just once a day, first thing in the "
        "morning, because constant notifications wreck my focus; in quiet weeks I'm less "
        "strict.",
    ),
    Item(
        "cycling-commute-dry",
        "When the weather is dry I much prefer cycling to work over taking the bus; it "
        "wakes me up, although in the rain I give in and take the bus.",
        (
            "Riding my bike to the office gets me properly awake, so on dry days I choose it "
            "over public transport, but rain sends me back to the bus.",
            "I like to bike to work instead of catching the bus whenever it's not wet out, "
            "because the ride wakes me up.",
        ),
        "When the weather is dry I much prefer the bus over cycling to work; cycling "
        "wears me out, although in the rain I'm fine on the bike.",
        "When it's pouring with rain I much prefer cycling to work over taking the bus; "
        "it wakes me up, although on dry days I just take the bus.",
        "When the weather is dry I much prefer walking to work over taking the bus; it "
        "wakes me up, although in the rain I give in and take the bus.",
    ),
    Item(
        "dentist-morning",
        "I'd rather book dental appointments first thing in the morning, because if I "
        "have to wait all day I get more and more anxious about it.",
        (
            "Waiting all day for the dentist makes my nerves worse, so I try to get the "
            "earliest appointment of the morning.",
            "Dentist visits are better for me as early as possible in the day; the longer "
            "I wait, the more anxious I get.",
        ),
        "I'd rather not book dental appointments first thing in the morning, because I'm "
        "too groggy and anxious then to cope with it.",
        "I'd rather book haircut appointments first thing in the morning, because if I "
        "have to wait all day I get more and more restless about it.",
        "I'd rather book dental appointments late on a Friday afternoon, because then I "
        "have the weekend to recover from it.",
    ),
    Item(
        "index-funds",
        "For my retirement savings I'd stick with low-cost index funds rather than picking "
        "stocks, because I don't trust myself to time the market, at least for now.",
        (
            "I don't think I can time the market, so for my pension money cheap index "
            "funds make more sense to me than choosing shares, for the time being.",
            "My long-term retirement investing goes into inexpensive tracker funds instead "
            "of individual stocks; I doubt my ability to pick the right moments.",
        ),
        "For my retirement savings I'd avoid low-cost index funds and pick stocks, "
        "because I trust myself to time the market, at least for now.",
        "For my short-term spending money I'd stick with low-cost index funds rather than "
        "picking stocks, because I don't trust myself to time the market.",
        "For my retirement savings I'd stick with government bonds rather than picking "
        "stocks, because I don't trust myself to time the market, at least for now.",
    ),
    Item(
        "hiking-solo-weekdays",
        "On weekday hikes I actually prefer going alone, because the trails are quiet and "
        "I can set my own pace; weekend hikes are for company.",
        (
            "The paths are empty during the week and I like walking at my own speed, so "
            "when I hike on a weekday I'd rather be by myself.",
            "I enjoy solo hiking on working days, as it's calm and nobody dictates the pace; "
            "at weekends I hike with others.",
        ),
        "On weekday hikes I actually dislike going alone, because the trails are too "
        "quiet and I get lonely; weekend hikes are for solitude.",
        "On weekend hikes I actually prefer going alone, because I can set my own pace; "
        "weekday hikes are for company.",
        "On weekday hikes I actually prefer going with my dog, because the trails are "
        "quiet and I can set my own pace; weekend hikes are for company.",
    ),
    Item(
        "movies-subtitles",
        "When I watch foreign films I prefer the original audio with subtitles over "
        "dubbing, because dubbed voices feel fake to me, though with kids around we dub.",
        (
            "Dubbed voices never sound real to me, so for films in other languages I choose "
            "the original soundtrack with subtitles, unless the children are watching.",
            "I'd rather read subtitles and hear the actors themselves than watch a dubbed "
            "version of a foreign movie; dubbing seems artificial.",
        ),
        "When I watch foreign films I prefer dubbing over the original audio with "
        "subtitles, because reading subtitles tires me, though with kids around we dub.",
        "When I watch English films I prefer the original audio with subtitles over "
        "none, because I mishear lines, though with kids around we skip them.",
        "When I watch foreign films I prefer the original audio without any subtitles, "
        "because dubbed voices feel fake to me, though with kids around we dub.",
    ),
    Item(
        "phone-small-size",
        "I'd prefer a small phone, one I can use with one hand, even if the battery is "
        "weaker, because I mostly use it on the go.",
        (
            "Since I'm usually using my phone while moving around, I want a compact one "
            "that works one-handed, and I'll accept a smaller battery for that.",
            "A phone I can operate with a single hand matters more to me than battery life, "
            "as I use mine on the move most of the time.",
        ),
        "I'd avoid a small phone, one I can use with one hand, because the battery is "
        "weaker, and I mostly use it on the go.",
        "I'd prefer a small tablet, one I can hold with one hand, even if the battery is "
        "weaker, because I mostly read in bed.",
        "I'd prefer a large phone with a big screen, even if I need two hands, because I "
        "mostly use it on the go.",
    ),
    Item(
        "language-app-short",
        "For learning Spanish I like short daily lessons on my phone rather than long "
        "weekend classes, because I forget things if I go a week without practice.",
        (
            "A week without practising and I lose what I learned, so for Spanish I prefer "
            "brief everyday sessions on my phone to long classes at the weekend.",
            "I'd rather study Spanish a little every day with a phone app than in lengthy "
            "Saturday courses, since gaps of a week make me forget.",
        ),
        "For learning Spanish I dislike short daily lessons on my phone and want long "
        "weekend classes, because daily practice feels too shallow to me.",
        "For learning the piano I like short daily lessons on my phone rather than long "
        "weekend classes, because I forget things if I go a week without practice.",
        "For learning Japanese I like short daily lessons on my phone rather than long "
        "weekend classes, because I forget things if I go a week without practice.",
    ),
]
