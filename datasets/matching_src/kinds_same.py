"""Pairs where the stored fact states the gold fact in other words (all labeled a match).

Each entry is ``(gold, stored)``. Gold facts come in the styles labeled datasets use (terse
third person, verbose first person); stored facts in the styles memory models write.
"""

from __future__ import annotations

__all__ = ["NEGATIVE_RESTATED", "PARAPHRASE", "PERSON"]

# Terse <-> verbose, same claim (person kept mostly the same: first<->third is its own kind).
PARAPHRASE: list[tuple[str, str]] = [
    (
        "Works as a pediatric nurse at St Mary's hospital in Leeds",
        "User is a pediatric nurse at St Mary's in Leeds",
    ),
    (
        "Has been a vegetarian for about ten years now",
        "Has been vegetarian for ten years",
    ),
    ("Is training for the Berlin marathon", "User is currently training to run the Berlin Marathon"),
    (
        "Usually cycles to work, about 8 km each way along the canal",
        "Cycles to work (8 km each way)",
    ),
    ("Has a golden retriever named Biscuit", "User owns a golden retriever called Biscuit"),
    (
        "Is learning Japanese because the family is moving to Osaka next spring",
        "Learning Japanese ahead of a family move to Osaka next spring",
    ),
    (
        "Drinks at least three cups of black coffee a day",
        "User drinks three or more cups of black coffee daily",
    ),
    (
        "Her favourite cuisine is Thai, especially green curry",
        "Favorite cuisine is Thai food, especially green curry",
    ),
    ("Is saving up to buy a house within two years", "Saving money to buy a house in the next two years"),
    (
        "Plays five-a-side football every Thursday evening with colleagues",
        "Plays five-a-side football with coworkers on Thursday evenings",
    ),
    ("Recently adopted a rescue cat", "User recently adopted a cat from a rescue shelter"),
    (
        "Works remotely for a Berlin-based software company",
        "Remote software developer for a company based in Berlin",
    ),
    (
        "Is a huge fan of older science fiction novels, like Asimov and Le Guin",
        "Loves classic science fiction novels (Asimov, Le Guin)",
    ),
    (
        "Suffers from migraines, usually triggered by lack of sleep",
        "Gets migraines, often triggered by poor sleep",
    ),
    ("Has been doing yoga every morning for the past year", "Practices yoga every morning"),
    ("Keeps kosher at home", "User keeps a kosher kitchen at home"),
    (
        "Is terrible with directions and always relies on the GPS on her phone",
        "Relies on phone GPS because of a poor sense of direction",
    ),
    ("Writes Python and Rust for a living", "Professional software engineer who writes Python and Rust"),
    ("Goes to bed around 10 pm and wakes up at 6", "Sleeps from about 10pm to 6am"),
    ("Is a member of a local chess club", "User belongs to a chess club in their town"),
    (
        "Prefers audiobooks to paper books during the commute",
        "Listens to audiobooks rather than reading printed books while commuting",
    ),
    ("Is doing a part-time MBA at the Open University", "Studying part-time for an MBA at the Open University"),
    (
        "Takes the 7:15 train to Manchester every weekday",
        "Commutes to Manchester on the 7:15 train on weekdays",
    ),
    ("Grows tomatoes and chillies on the balcony", "Grows tomatoes and chilli peppers on their balcony"),
    ("Has type 1 diabetes", "User is a type 1 diabetic"),
    ("Her daughter Maya just started primary school", "Daughter Maya recently started primary school"),
    ("Volunteers at a food bank twice a month", "Volunteers twice a month at the local food bank"),
    ("Wants to run a half marathon before turning 40", "Goal: complete a half marathon before age 40"),
    ("Is left-handed", "User is left handed"),
    ("Plays bass guitar in a covers band", "Bassist in a cover band"),
    ("Shares a flat with two friends in Glasgow", "Lives in Glasgow in a flat shared with two friends"),
    (
        "Prefers short, bullet-point answers without long explanations",
        "Wants concise bullet-point replies rather than lengthy explanations",
    ),
    ("Uses Linux on all of his machines, mostly Arch", "Uses Linux (mainly Arch) on all computers"),
    ("Likes to read before falling asleep", "Reads in bed before going to sleep"),
    (
        "Is planning a trip to Iceland in February to see the northern lights",
        "Planning a February trip to Iceland to see the aurora",
    ),
    ("Has two older brothers", "User has 2 older brothers"),
    ("Took up pottery classes this year", "Started taking pottery classes this year"),
    ("Is a nurse who works night shifts", "Works night shifts as a nurse"),
    (
        "Is really into bouldering and goes to the climbing gym three times a week",
        "Goes bouldering at a climbing gym three times a week",
    ),
    ("Her partner is a secondary school teacher", "User's partner teaches at a secondary school"),
    ("Lives with her elderly mother and looks after her", "Cares for her elderly mother, who lives with her"),
    ("Enjoys making sourdough bread at the weekend", "Bakes sourdough bread on weekends"),
    ("Doesn't eat pork", "User does not eat pork"),
    ("Never drinks alcohol", "User doesn't drink alcohol at all"),
    ("Is allergic to penicillin", "Has a penicillin allergy"),
    ("Avoids gluten because of coeliac disease", "Has coeliac disease and avoids gluten"),
    (
        "Hates being called by her full name, Margaret",
        "Dislikes being called Margaret (her full name)",
    ),
    ("Studies marine biology at the University of Plymouth", "Marine biology student at the University of Plymouth"),
    ("Speaks fluent German and some Italian", "Fluent in German and speaks a little Italian"),
    ("Wakes up at 5 am to go swimming before work", "Swims before work, waking up at 5am"),
    ("Is red-green colour-blind", "User has red-green color blindness"),
    (
        "Her usual weekend activity is hiking in the Peak District",
        "Usually spends weekends hiking in the Peak District",
    ),
    ("Collects vintage film cameras", "Collector of vintage film cameras"),
    ("Prefers to be addressed informally, by first name", "Wants to be called by first name, informally"),
    ("Has lived in Singapore since 2019", "Has been living in Singapore since 2019"),
    (
        "Owns an electric cargo bike for taking the kids to school",
        "Takes the kids to school on an electric cargo bike",
    ),
    ("Works four days a week, with Fridays off", "Has a four-day work week (Fridays off)"),
    ("Is a big Formula 1 fan and never misses a race", "Big fan of Formula 1, watches every race"),
    ("Is trying to cut down on sugar", "Trying to reduce sugar intake"),
    (
        "Is the treasurer of the PTA at her children's school",
        "Serves as treasurer of the PTA at her kids' school",
    ),
    ("Prefers aisle seats on long flights", "Likes to sit in the aisle seat on long-haul flights"),
]

# First person <-> third person (and a few stored facts written in the first person).
PERSON: list[tuple[str, str]] = [
    ("I have two cats, Luna and Pip.", "User has two cats named Luna and Pip"),
    ("My sister lives in Toronto.", "User's sister lives in Toronto"),
    ("I'm training for a marathon in October.", "Is training for a marathon in October"),
    ("I work in accounting at a logistics firm.", "Works in accounting at a logistics company"),
    ("I grew up on a farm in Cornwall.", "Grew up on a farm in Cornwall"),
    ("I'm afraid of heights.", "User is afraid of heights"),
    (
        "My husband and I just bought our first home in Leeds.",
        "User and her husband recently bought their first home in Leeds",
    ),
    ("I only take oat milk in my coffee.", "Only uses oat milk in coffee"),
    ("I'm a night owl, I rarely sleep before 2 am.", "He is a night owl who rarely goes to sleep before 2 AM"),
    ("My son has a severe nut allergy.", "User's son has a severe nut allergy"),
    ("I teach maths at a secondary school.", "She teaches math at a secondary school"),
    ("I've just started a new job as a product designer.", "Recently started a new job as a product designer"),
    ("I speak Portuguese at home with my parents.", "Speaks Portuguese with parents at home"),
    ("I'm allergic to cats, so no pets for me.", "Is allergic to cats"),
    ("I drive a 2015 Volkswagen Golf.", "Drives a 2015 VW Golf"),
    ("I'm vegan.", "User is vegan"),
    (
        "I'm originally from Lagos but moved to London for university.",
        "Originally from Lagos; moved to London for university",
    ),
    ("My girlfriend and I are getting married next summer.", "Is getting married to his girlfriend next summer"),
    (
        "I love spending Sunday mornings at the farmers' market.",
        "Enjoys going to the farmers' market on Sunday mornings",
    ),
    ("I've been playing the piano since I was six.", "Has played piano since age six"),
    ("My mum has early-stage dementia.", "User's mother has early-stage dementia"),
    ("I work from home three days a week.", "Works from home 3 days per week"),
    ("I have a PhD in organic chemistry.", "Holds a PhD in organic chemistry"),
    ("I'm pregnant with our second child.", "She is expecting her second child"),
    ("I hate talking on the phone, text me instead.", "Dislikes phone calls and prefers texting"),
    ("I want to learn to sail this year.", "Wants to learn sailing this year"),
    ("I've got a bad knee from an old skiing injury.", "Has a bad knee from an old skiing injury"),
    ("I'm a Leeds United season ticket holder.", "Holds a Leeds United season ticket"),
    ("I use a wheelchair.", "User is a wheelchair user"),
    ("We have a toddler, so we're always exhausted.", "Has a toddler"),
    ("I run a small bakery in Bristol.", "Owns and runs a small bakery in Bristol"),
    ("I don't have a driving licence.", "User doesn't have a driver's license"),
    ("I commute by bus, about 40 minutes each way.", "Takes the bus to work (around 40 minutes each way)"),
    ("I'm on a low-sodium diet for my blood pressure.", "Follows a low-sodium diet due to high blood pressure"),
    ("My best friend Jamie is moving to Australia.", "User's best friend Jamie is moving to Australia"),
    ("I prefer emails over meetings whenever possible.", "Prefers email to meetings when possible"),
    ("I just turned 30.", "User recently turned 30"),
    ("I volunteer as a Scout leader on Tuesday nights.", "Volunteers as a Scout leader on Tuesday evenings"),
    ("Is a keen birdwatcher", "I am a keen birdwatcher"),
    ("Works as a barista while studying", "I work as a barista while I study"),
    ("Lives alone with a parrot named Kiwi", "I live alone with my parrot Kiwi"),
]

# A negative preference in the gold fact, restated positively by the stored fact (a match:
# the stored fact states what the user wants instead). A few restate a positive gold fact
# negatively where the two are equivalent.
NEGATIVE_RESTATED: list[tuple[str, str]] = [
    ("I don't like small dogs and prefer larger breeds.", "Prefers large dog breeds"),
    ("I can't stand cold weather.", "Prefers warm weather"),
    ("I don't drink coffee, I stick to tea.", "Drinks tea instead of coffee"),
    ("I avoid crowded places whenever I can.", "Prefers quiet, uncrowded places"),
    ("I don't eat anything spicy.", "Prefers mild food"),
    ("I'm not a fan of big parties.", "Prefers small gatherings"),
    ("I really dislike open-plan offices.", "Prefers working in a private office"),
    ("I never take the lift, I always use the stairs.", "Always takes the stairs instead of the lift"),
    ("I hate getting up early.", "Prefers to get up late"),
    ("I don't like sweet wines.", "Prefers dry wines"),
    ("I refuse to fly long-haul anymore, I take the train in Europe.", "Prefers trains to long-haul flights"),
    ("I avoid dairy milk and use oat milk instead.", "Uses oat milk rather than dairy milk"),
    ("I don't want long explanations, just give me the code.", "Prefers code over long explanations"),
    ("Doesn't like loud restaurants", "Prefers quiet restaurants"),
    ("I can't stand hot summers, I'm much happier in cool weather.", "Prefers cool weather to hot summers"),
    ("I don't enjoy beach holidays; I'd rather go hiking in the mountains.", "Prefers mountain hiking trips to beach holidays"),
    ("Dislikes driving in the city", "Prefers public transport to driving in the city"),
    ("I hate cluttered rooms.", "Prefers tidy, minimalist rooms"),
    ("I'm not keen on fiction, I read mostly non-fiction.", "Prefers non-fiction books"),
    ("I don't like working late, I'd rather start early.", "Prefers starting work early rather than working late"),
    ("Avoids sugary drinks and sticks to water", "Drinks water rather than sugary drinks"),
    ("I never buy fast fashion, only second-hand clothes.", "Buys second-hand clothes instead of fast fashion"),
    ("Dislikes dark roast coffee", "Prefers light roast coffee"),
    ("I don't like Windows at all; Mac all the way.", "Prefers Mac over Windows"),
    ("I don't do horror films, comedies are more my thing.", "Prefers comedies to horror films"),
    ("Hates cold showers", "Prefers hot showers"),
    ("I'm not into team sports, I prefer running on my own.", "Prefers solo running to team sports"),
    ("Dislikes small talk", "Prefers deep conversations over small talk"),
    ("I'm not a morning person at all.", "Is more of an evening person than a morning person"),
    ("I really don't like noisy neighbourhoods.", "Prefers quiet neighborhoods"),
    ("I avoid e-books, I like the feel of paper.", "Prefers paper books to e-books"),
    ("Doesn't like video calls; prefers voice calls", "Prefers voice calls over video calls"),
    ("I can't stand gloomy, grey weather.", "Prefers sunny weather"),
    ("I don't like crowded gyms, so I work out at home.", "Prefers working out at home to crowded gyms"),
    ("Dislikes thick crust pizza", "Prefers thin crust pizza"),
    ("I'm not a fan of formal dress codes.", "Prefers casual dress"),
    ("I don't like cats much, I'm a dog person.", "Is a dog person"),
    ("Hates sitting in traffic, so she cycles everywhere", "Prefers cycling everywhere to sitting in traffic"),
    ("Does not smoke", "Is a non-smoker"),
    ("Prefers to stay sober at parties", "Doesn't drink alcohol at parties"),
]
