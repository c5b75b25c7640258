"""Where synthetic-acceptance knobs are set, in any text: their names (:mod:`.names`), the census of every
occurrence (:mod:`.census`: what ``check`` judges and what refuses a server that forces acceptance) and a launch
script's pins (:mod:`.scripts`: what ``check`` judges and what ``select`` plans a script by)."""
