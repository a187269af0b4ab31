-- SPDX-License-Identifier: LGPL-2.1-or-later
-- pandoc filter of docs/md2man: a table does not fit a manual page on an 80-column terminal (tbl
-- warns, man --warnings with it): each row becomes an entry of a definition list, its first cell
-- the term, each other non-empty cell a paragraph headed by its column's name.
local stringify = pandoc.utils.stringify

function Table(tbl)
  local names = {}
  if tbl.head and #tbl.head.rows > 0 then
    for i, c in ipairs(tbl.head.rows[1].cells) do names[i] = stringify(c.contents) end
  end
  local items = {}
  for _, body in ipairs(tbl.bodies) do
    for _, row in ipairs(body.body) do
      local cells = row.cells
      local term = pandoc.utils.blocks_to_inlines(cells[1].contents)
      local defs = {}
      for i = 2, #cells do
        local inl = pandoc.utils.blocks_to_inlines(cells[i].contents)
        if #inl > 0 then
          local p = pandoc.List()
          if names[i] and names[i] ~= "" then
            p:insert(pandoc.Emph({pandoc.Str(names[i] .. ":")}))
            p:insert(pandoc.Space())
          end
          p:extend(inl)
          table.insert(defs, {pandoc.Para(p)})
        end
      end
      if #defs == 0 then defs = {{pandoc.Para({})}} end
      table.insert(items, {term, defs})
    end
  end
  return pandoc.DefinitionList(items)
end
