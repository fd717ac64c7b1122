package pretrain

// Word lists of the synthetic tasks. They are data, kept small so the tiny model can learn them.
var (
	commonWords = []string{"apple", "anchor", "arrow", "autumn", "banana", "basket", "bird", "bread", "bridge",
		"butter", "candle", "castle", "cloud", "coffee", "cookie", "dance", "desert", "dog", "dream", "drum",
		"eagle", "earth", "engine", "evening", "feather", "field", "fish", "flower", "forest", "garden", "giant",
		"glass", "gold", "grape", "hammer", "harbor", "heart", "honey", "horse", "island", "ice", "ink", "jacket",
		"jelly", "jungle", "kettle", "kite", "kitten", "king", "ladder", "lamp", "lemon", "lion", "magic",
		"maple", "market", "moon", "mountain", "needle", "nest", "night", "north", "ocean", "olive", "orange",
		"owl", "paper", "pencil", "piano", "planet", "queen", "quiet", "quilt", "rabbit", "river", "robot",
		"rocket", "salt", "sand", "silver", "snow", "star", "table", "tiger", "tomato", "train", "umbrella",
		"uncle", "valley", "velvet", "violin", "water", "whale", "window", "winter", "yellow", "yogurt", "zebra",
		"zero"}
	animals   = []string{"cat", "dog", "horse", "cow", "lion", "tiger", "rabbit", "owl", "eagle", "whale", "zebra", "sheep", "duck", "frog", "bear"}
	colors    = []string{"red", "blue", "green", "yellow", "orange", "purple", "black", "white", "brown", "pink"}
	fruits    = []string{"apple", "banana", "cherry", "grape", "lemon", "mango", "orange", "peach", "pear", "plum"}
	adjective = []string{"small", "bright", "quiet", "warm", "friendly", "fast", "happy", "soft", "calm", "tall", "cold", "old", "new", "kind", "busy"}
	nouns     = []string{"dog", "city", "ocean", "winter", "garden", "river", "robot", "forest", "school", "music", "morning", "coffee", "mountain", "library", "summer"}
	capitals  = [][2]string{{"France", "Paris"}, {"Germany", "Berlin"}, {"Italy", "Rome"}, {"Spain", "Madrid"},
		{"Japan", "Tokyo"}, {"China", "Beijing"}, {"India", "New Delhi"}, {"Canada", "Ottawa"}, {"Mexico", "Mexico City"},
		{"Brazil", "Brasilia"}, {"Egypt", "Cairo"}, {"Kenya", "Nairobi"}, {"Russia", "Moscow"}, {"Greece", "Athens"},
		{"Portugal", "Lisbon"}, {"Norway", "Oslo"}, {"Sweden", "Stockholm"}, {"Poland", "Warsaw"},
		{"Ireland", "Dublin"}, {"Australia", "Canberra"}, {"Peru", "Lima"}, {"Chile", "Santiago"},
		{"Turkey", "Ankara"}, {"Austria", "Vienna"}, {"Cuba", "Havana"}, {"Thailand", "Bangkok"}}
	cities        = []string{"Paris", "London", "Tokyo", "Berlin", "Madrid", "Rome", "Cairo", "Sydney", "Toronto", "Chicago", "Boston", "Lima", "Oslo", "Vienna", "Seoul", "Dublin", "Austin", "Denver"}
	animalSounds  = [][2]string{{"cow", "moo"}, {"dog", "woof"}, {"cat", "meow"}, {"duck", "quack"}, {"sheep", "baa"}, {"owl", "hoot"}, {"lion", "roar"}, {"frog", "ribbit"}, {"horse", "neigh"}, {"pig", "oink"}}
	thingColors   = [][2]string{{"the sky", "blue"}, {"grass", "green"}, {"a banana", "yellow"}, {"snow", "white"}, {"coal", "black"}, {"a tomato", "red"}, {"an orange", "orange"}, {"a plum", "purple"}, {"chocolate", "brown"}, {"a lemon", "yellow"}}
	opposites     = [][2]string{{"hot", "cold"}, {"big", "small"}, {"up", "down"}, {"fast", "slow"}, {"happy", "sad"}, {"day", "night"}, {"old", "new"}, {"open", "closed"}, {"light", "dark"}, {"early", "late"}, {"left", "right"}, {"full", "empty"}}
	legs          = [][2]string{{"spider", "eight"}, {"dog", "four"}, {"bird", "two"}, {"cat", "four"}, {"insect", "six"}, {"horse", "four"}, {"duck", "two"}, {"octopus", "eight"}}
	weekdays      = []string{"Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"}
	numberWords   = []string{"zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"}
	stockSymbols  = []string{"AAPL", "MSFT", "GOOG", "AMZN", "TSLA", "NVDA", "IBM", "ORCL"}
	languages     = []string{"French", "Spanish", "German", "Italian", "Japanese"}
	people        = []string{"alice", "bob", "carol", "dave", "erin", "frank", "grace", "heidi"}
	searchTopics  = []string{"the history of tea", "how volcanoes work", "the tallest building", "best pizza recipes", "the speed of light", "how bees make honey", "the first moon landing", "why the sky is blue"}
	conditions    = []string{"sunny", "cloudy", "rainy", "windy", "snowy", "foggy"}
	reminderTexts = []string{"call mom", "buy milk", "water the plants", "pay the rent", "go to the gym", "read a book"}
	systemPrompts = []string{"You are a helpful assistant.", "You are Tiny Chat, a small helpful assistant.", "Answer briefly.", "You are a friendly assistant. Keep answers short."}
)
